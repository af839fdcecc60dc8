#include "data/transitions.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace induct {

namespace {
constexpr int64_t kTableLimit = int64_t{1} << 24;  // entries (64 MiB)
constexpr int64_t kTokenLimit = int64_t{1} << 30;  // actions + states must fit in int32 tokens
}  // namespace

Transitions::Transitions(std::shared_ptr<const Task> task, const std::string& task_name)
    : task_(std::move(task)),
      actions_(task_->num_actions()),
      states_(task_->num_states()),
      initial_(task_->initial_state()) {
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("task '" + task_name + "': " + what);
  };
  if (actions_ < 1) fail("num_actions() must be at least 1");
  if (states_ < 1) fail("num_states() must be at least 1");
  if (actions_ + states_ > kTokenLimit) fail("too many actions and states for int32 tokens");
  if (initial_ < 0 || initial_ >= states_) fail("initial_state() is out of range");
  const bool tabulate = actions_ * states_ <= kTableLimit;
  if (tabulate) table_.resize(static_cast<size_t>(actions_ * states_));
  // Check every transition once when tabulating; otherwise they are checked as used.
  for (int64_t s = 0; tabulate && s < states_; ++s) {
    for (int64_t a = 0; a < actions_; ++a) {
      if (!task_->allows(s, a)) {
        table_[s * actions_ + a] = -1;
        total_ = false;
        continue;
      }
      int64_t next = task_->step(s, a);
      if (next < 0 || next >= states_)
        fail("step(" + std::to_string(s) + ", " + std::to_string(a) +
             ") = " + std::to_string(next) + " is not a state");
      table_[s * actions_ + a] = static_cast<int32_t>(next);
    }
  }
  if (!tabulate)  // a task this large must allow everything: its sequences are all of A^n
    for (int64_t a = 0; a < std::min<int64_t>(actions_, 64); ++a)
      if (!task_->allows(initial_, a))
        fail("has partial transitions (allows() is false somewhere) and " +
             std::to_string(actions_ * states_) + " (state, action) pairs; at most " +
             std::to_string(kTableLimit) + " are supported for such a task");
}

void Transitions::prefix_states(const int32_t* actions, int n, int32_t* states) const {
  int64_t state = initial_;
  for (int k = 0; k < n; ++k) {
    if (table_.empty() &&
        !task_->allows(state, actions[k]))  // checked at construction if tabulated
      throw std::runtime_error("task allows() refuses action " + std::to_string(actions[k]) +
                               " in state " + std::to_string(state) +
                               ", but has too many (state, action) pairs to draw only "
                               "valid sequences (at most " +
                               std::to_string(kTableLimit) + ")");
    state = step(state, actions[k]);
    if (table_.empty() && (state < 0 || state >= states_))
      throw std::runtime_error("task step() returned " + std::to_string(state) +
                               ", which is not a state");
    states[k] = static_cast<int32_t>(state);
  }
}

}  // namespace induct
