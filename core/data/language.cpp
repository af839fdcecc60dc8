#include "data/language.hpp"

#include <stdexcept>

#include "data/transitions.hpp"
#include "util/rng.hpp"

namespace induct {

namespace {
constexpr uint64_t kCountLimit = uint64_t{1} << 63;  // codes stay below it (length_stream.hpp)
constexpr uint64_t kTableLimit = uint64_t{1} << 25;  // counts (256 MiB)
}  // namespace

std::shared_ptr<const Language> Language::of(const Transitions& t, int max_length,
                                             const std::string& task_name) {
  if (t.total()) return nullptr;
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("task '" + task_name + "': " + what);
  };
  auto language = std::make_shared<Language>();
  Language& l = *language;
  l.max_length_ = max_length;
  l.states_ = t.num_states();
  l.initial_ = t.initial_state();
  if (static_cast<uint64_t>(max_length + 1) * static_cast<uint64_t>(l.states_) > kTableLimit)
    fail(std::to_string(l.states_) + " states at length " + std::to_string(max_length) +
         ": too many to count its valid sequences");
  l.moves_.resize(static_cast<size_t>(l.states_));
  uint64_t fingerprint =
      mix64(static_cast<uint64_t>(l.states_) ^ mix64(static_cast<uint64_t>(l.initial_)));
  for (int64_t s = 0; s < l.states_; ++s)
    for (int64_t a = 0; a < t.num_actions(); ++a)
      if (t.allows(s, a)) {
        const int64_t next = t.step(s, a);
        l.moves_[s].emplace_back(static_cast<int32_t>(a), static_cast<int32_t>(next));
        fingerprint = mix64(fingerprint ^
                            mix64((static_cast<uint64_t>(s) << 40) ^
                                  (static_cast<uint64_t>(a) << 20) ^ static_cast<uint64_t>(next)));
      }
  l.id_ = "language " + std::to_string(fingerprint);
  l.counts_.assign(static_cast<size_t>(max_length + 1) * l.states_, 0);
  for (int64_t s = 0; s < l.states_; ++s) l.counts_[s] = 1;  // the empty continuation
  for (int r = 1; r <= max_length; ++r) {
    uint64_t* row = &l.counts_[static_cast<size_t>(r) * l.states_];
    const uint64_t* shorter = &l.counts_[static_cast<size_t>(r - 1) * l.states_];
    for (int64_t s = 0; s < l.states_; ++s) {
      uint64_t c = 0;
      for (const auto& [action, next] : l.moves_[s]) {
        c += shorter[next];
        if (c >= kCountLimit) c = kCountLimit;  // saturated: an error only if it is reachable
      }
      row[s] = c;
    }
    if (row[l.initial_] >= kCountLimit)
      fail("2^63 or more valid sequences of length " + std::to_string(r) +
           " (at most 2^63 are supported for a task with partial transitions)");
  }
  return language;
}

void Language::unrank(int n, uint64_t index, int32_t* out) const {
  if (n > max_length_ || index >= count(n))
    throw std::logic_error("Language::unrank: out of range");
  int64_t state = initial_;
  for (int k = 0; k < n; ++k) {
    const uint64_t* rest = &counts_[static_cast<size_t>(n - k - 1) * states_];
    for (const auto& [action, next] : moves_[state]) {
      if (index < rest[next]) {
        out[k] = action;
        state = next;
        break;
      }
      index -= rest[next];
    }
  }
}

}  // namespace induct
