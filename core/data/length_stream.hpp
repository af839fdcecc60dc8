// Distinct sequences of one length, in a seeded random order.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "util/rng.hpp"

namespace induct {

// Counts of sequences saturate here (A^n may exceed 64 bits).
constexpr uint64_t kUnbounded = UINT64_MAX;

// a^n, or kUnbounded when it does not fit in 64 bits.
uint64_t saturating_pow(uint64_t a, int n);
uint64_t saturating_add(uint64_t a, uint64_t b);

// Hands out the A^n sequences of length n without repetition, each draw uniform over the
// sequences not drawn yet: a lazy Fisher-Yates shuffle of their indices (dense for small
// spaces, a hash map of displaced entries for large ones; both give the same order). When
// A^n does not fit in 64 bits, draws random sequences and rejects repeats.
// Validation takes the first draws of each length's stream and training the following ones,
// so the two are disjoint by construction and the training set for N is a prefix of the
// one for any larger N.
class LengthStream {
 public:
  LengthStream(int64_t num_actions, int length, uint64_t seed);

  int length() const { return length_; }
  uint64_t space() const { return space_; }  // A^n, or kUnbounded
  uint64_t drawn() const { return drawn_; }
  uint64_t remaining() const { return space_ == kUnbounded ? kUnbounded : space_ - drawn_; }
  // Writes the next sequence (length() actions). Precondition: remaining() > 0.
  void next(int32_t* out);

 private:
  uint64_t index_at(uint64_t position);

  int64_t num_actions_;
  int length_;
  uint64_t space_;
  uint64_t drawn_ = 0;
  Rng rng_;
  std::vector<uint64_t> dense_;                       // small spaces: the permutation itself
  std::unordered_map<uint64_t, uint64_t> displaced_;  // large spaces: its non-identity entries
  std::unordered_set<uint64_t> seen_;                 // unbounded spaces: hashes drawn so far
};

}  // namespace induct
