#include "format/format.hpp"

namespace induct {

int32_t ExampleSet::encode(size_t i, int64_t* tokens, int64_t* targets) const {
  thread_local std::vector<int32_t> actions, states;
  const int n = length(i);
  actions.resize(n);
  states.resize(n);
  sequences_.decode(i, actions.data());
  transitions_->prefix_states(actions.data(), n, states.data());
  format_->encode(actions.data(), states.data(), n, vocab_, tokens, targets);
  return states[n - 1];
}

}  // namespace induct
