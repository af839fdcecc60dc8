// The Task interface: a finite state machine whose transitions the models must track.
//
// A task plugin only says what the machine is. The core derives everything else from it
// (prefix states, the transition table, enumeration and sampling of sequences, counts), so
// a task stays a few dozen lines. Actions and states are numbered 0..count-1; the core maps
// them to tokens (actions first, then states, then specials; docs/method.md section 3).
#pragma once

#include <cstdint>
#include <string>

#include "induct/export.hpp"
#include "induct/options.hpp"

namespace induct {

class INDUCT_SDK_API Task {
 public:
  virtual ~Task();

  virtual int64_t num_actions() const = 0;
  virtual int64_t num_states() const = 0;
  virtual int64_t initial_state() const = 0;
  // The state after applying `action` in `state`. Must be a pure function.
  virtual int64_t step(int64_t state, int64_t action) const = 0;
  // Whether `action` may be taken in `state` (default: always, as in a group). A task with
  // partial transitions (an automaton, e.g. bounded-depth Dyck-k) says no where it has none:
  // the core then draws only the valid sequences, counts them per length and never calls
  // step() for a disallowed pair. Must be a pure function.
  virtual bool allows(int64_t state, int64_t action) const;

  // Names for printing (defaults: the number).
  virtual std::string action_name(int64_t action) const;
  virtual std::string state_name(int64_t state) const;
};

// What the host gives a task factory.
struct TaskContext {
  // The task's section of the study file (e.g. `task: {name: modular, m: 5}`).
  Options options;
};

}  // namespace induct
