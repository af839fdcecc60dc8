// A task's transitions as a table, and the one place that computes prefix states.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "induct/task.hpp"

namespace induct {

class Transitions {
 public:
  // Checks the task (counts >= 1, initial state and every transition in range) and tabulates
  // step() when the table is small (else calls the task). Throws std::runtime_error naming
  // `task_name` when the task is inconsistent.
  Transitions(std::shared_ptr<const Task> task, const std::string& task_name);

  int64_t num_actions() const { return actions_; }
  int64_t num_states() const { return states_; }
  int64_t initial_state() const { return initial_; }
  int64_t step(int64_t state, int64_t action) const {
    return table_.empty() ? task_->step(state, action) : table_[state * actions_ + action];
  }
  // Task::allows, tabulated; total(): every action allowed in every state (a group).
  bool allows(int64_t state, int64_t action) const {
    return total_ ||
           (table_.empty() ? task_->allows(state, action) : table_[state * actions_ + action] >= 0);
  }
  bool total() const { return total_; }
  // states[k] = s_{k+1}: the state after actions[0..k] (docs/method.md section 1).
  void prefix_states(const int32_t* actions, int n, int32_t* states) const;
  const Task& task() const { return *task_; }

 private:
  std::shared_ptr<const Task> task_;
  int64_t actions_, states_, initial_;
  std::vector<int32_t> table_;  // -1: not allowed
  bool total_ = true;
};

}  // namespace induct
