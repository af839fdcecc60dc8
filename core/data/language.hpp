// The valid action sequences of a task whose actions are not all allowed in every state
// (Task::allows: an automaton with partial transitions, e.g. bounded-depth Dyck-k).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace induct {

class Transitions;

// Counted per length by dynamic programming over the states reachable from the initial one,
// and numbered in lexicographic order (first action most significant): the i-th valid
// sequence of length n comes from unranking i. So a length's sequences are coded by an index
// in [0, count(n)) exactly as the A^n sequences of a group are by theirs, and the seeded
// shuffles, validation caps, N_max and the prefix property carry over unchanged.
class Language {
 public:
  // Null when the task allows every action in every state (groups keep A^n and its codes).
  // Throws std::runtime_error, naming `task_name`, when a length up to `max_length` has 2^63
  // or more valid sequences, or when the count table would not fit.
  static std::shared_ptr<const Language> of(const Transitions& transitions, int max_length,
                                            const std::string& task_name);

  int max_length() const { return max_length_; }
  // Valid sequences of length n (n <= max_length()).
  uint64_t count(int n) const { return counts_[static_cast<size_t>(n) * states_ + initial_]; }
  // Writes the index-th valid sequence of length n (index < count(n)).
  void unrank(int n, uint64_t index, int32_t* out) const;
  // The same for the same transitions: the key of cached data sets.
  const std::string& id() const { return id_; }

 private:
  int max_length_ = 0;
  int64_t states_ = 0, initial_ = 0;
  std::vector<uint64_t> counts_;  // [r * states + s]: valid continuations of length r from s
  std::vector<std::vector<std::pair<int32_t, int32_t>>> moves_;  // per state: (action, next)
  std::string id_;
};

}  // namespace induct
