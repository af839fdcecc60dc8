#include "induct/format.hpp"

namespace induct {

// Out-of-line key function (see task.cpp).
Format::~Format() = default;

int64_t Format::extra_tokens() const { return 0; }
std::string Format::extra_token_name(int64_t i) const { return "extra" + std::to_string(i); }
int64_t Format::prompt_length(int n) const { return sequence_length(n); }
int64_t Format::action_position(int, int) const { return -1; }

}  // namespace induct
