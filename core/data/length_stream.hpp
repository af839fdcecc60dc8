// Distinct sequences of one length, in a seeded random order, as 64-bit codes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/language.hpp"
#include "util/rng.hpp"

namespace induct {

// Counts of sequences saturate here (A^n may exceed 64 bits).
constexpr uint64_t kUnbounded = UINT64_MAX;

// a^n, or kUnbounded when it does not fit in 64 bits.
uint64_t saturating_pow(uint64_t a, int n);
uint64_t saturating_add(uint64_t a, uint64_t b);

// How the 64-bit code of a sequence of one length becomes its actions. When A^n fits in 63
// bits the code is the sequence's index in [0, A^n) (digits most significant first). Otherwise
// the code is the index of its last `exact_digits` actions (the largest d with A^d < 2^63) and
// the actions before them are drawn from a generator keyed by (key, code): distinct codes are
// distinct sequences, and each sequence is uniform over all A^n (docs/method.md, section 2).
// With a Language (a task with partial transitions) the code is the index of the sequence
// among the language's valid ones of its length.
class SequenceCodec {
 public:
  SequenceCodec() = default;
  SequenceCodec(int64_t num_actions, int length, uint64_t key,
                std::shared_ptr<const Language> language = nullptr);
  int length() const { return length_; }
  uint64_t codes() const { return codes_; }  // distinct codes: min(A^n, A^exact_digits)
  bool exact() const { return exact_digits_ == length_; }
  void decode(uint64_t code, int32_t* out) const;  // writes length() actions

 private:
  int64_t num_actions_ = 0;
  int length_ = 0;
  int exact_digits_ = 0;
  uint64_t codes_ = 0;
  uint64_t key_ = 0;
  std::shared_ptr<const Language> language_;
};

// The sequences of length n in a seeded order without repetition, each position uniform over
// the sequences not at an earlier position: position -> code. Spaces of up to 2^22 sequences
// keep a Fisher-Yates shuffle of their indices, extended as far as positions are asked for
// (32 MiB at most); larger ones (and the codes of spaces beyond 63 bits) use a keyed Feistel
// permutation of [0, codes) with cycle walking: no memory, random access.
// Validation takes the first positions of each length's stream and training the following
// ones, so the two are disjoint by construction and the training set for N is a prefix of the
// one for any larger N.
class LengthStream {
 public:
  // Spaces of up to 2^22 sequences are shuffled (dense_limit: tests of the other path).
  static constexpr uint64_t kDenseLimit = uint64_t{1} << 22;
  LengthStream(int64_t num_actions, int length, uint64_t seed, uint64_t dense_limit = kDenseLimit,
               std::shared_ptr<const Language> language = nullptr);

  int length() const { return codec_.length(); }
  uint64_t space() const { return space_; }  // A^n (or the language's count), or kUnbounded
  // Positions that can be handed out: A^n, or A^d for spaces beyond 63 bits.
  uint64_t positions() const { return codec_.codes(); }
  uint64_t drawn() const { return drawn_; }
  uint64_t remaining() const { return space_ == kUnbounded ? kUnbounded : space_ - drawn_; }
  const SequenceCodec& codec() const { return codec_; }
  // The code at the next position. Precondition: remaining() > 0.
  uint64_t next_code();
  // Writes the next sequence (length() actions). Precondition: remaining() > 0.
  void next(int32_t* out) { codec_.decode(next_code(), out); }

 private:
  uint64_t permute(uint64_t position) const;

  SequenceCodec codec_;
  uint64_t space_;
  uint64_t drawn_ = 0;
  Rng rng_;
  std::vector<uint64_t> dense_;  // small spaces: the indices, shuffled up to drawn_
  uint64_t keys_[6] = {};        // large spaces: the Feistel round keys
  int half_bits_ = 0;
};

}  // namespace induct
