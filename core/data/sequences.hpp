// A set of action sequences of varying length, stored flat.
#pragma once

#include <cstdint>
#include <vector>

namespace induct {

struct SequenceSet {
  std::vector<int32_t> actions;      // all sequences, concatenated
  std::vector<int64_t> offsets{0};   // sequence i is actions[offsets[i], offsets[i+1])

  size_t size() const { return offsets.size() - 1; }
  int length(size_t i) const { return static_cast<int>(offsets[i + 1] - offsets[i]); }
  const int32_t* sequence(size_t i) const { return actions.data() + offsets[i]; }
  void add(const int32_t* sequence, int length) {
    actions.insert(actions.end(), sequence, sequence + length);
    offsets.push_back(static_cast<int64_t>(actions.size()));
  }
};

}  // namespace induct
