#include "data/length_stream.hpp"

#include <numeric>
#include <stdexcept>

namespace induct {

namespace {
// Codes stay below this (the Feistel domain then fits in 64 bits).
constexpr uint64_t kCodeLimit = uint64_t{1} << 63;
constexpr int kRounds = 6;
}  // namespace

uint64_t saturating_pow(uint64_t a, int n) {
  unsigned __int128 value = 1;
  for (int i = 0; i < n; ++i) {
    value *= a;
    if (value >= kUnbounded) return kUnbounded;
  }
  return static_cast<uint64_t>(value);
}

uint64_t saturating_add(uint64_t a, uint64_t b) { return a > kUnbounded - b ? kUnbounded : a + b; }

SequenceCodec::SequenceCodec(int64_t num_actions, int length, uint64_t key,
                             std::shared_ptr<const Language> language)
    : num_actions_(num_actions), length_(length), key_(key), language_(std::move(language)) {
  if (num_actions < 1 || length < 1) throw std::invalid_argument("SequenceCodec: empty space");
  if (language_) {
    if (length > language_->max_length())
      throw std::logic_error("SequenceCodec: longer than the language's counts");
    codes_ = language_->count(length);
    exact_digits_ = length;
    return;
  }
  codes_ = 1;
  const auto a = static_cast<uint64_t>(num_actions);
  while (exact_digits_ < length && (num_actions == 1 || codes_ < kCodeLimit / a)) {
    codes_ *= a;
    ++exact_digits_;
  }
}

void SequenceCodec::decode(uint64_t code, int32_t* out) const {
  if (language_) return language_->unrank(length_, code, out);
  const auto a = static_cast<uint64_t>(num_actions_);
  // The last exact_digits_ actions: the code's digits, most significant first.
  uint64_t rest = code;
  for (int k = length_ - 1; k >= length_ - exact_digits_; --k) {
    out[k] = static_cast<int32_t>(rest % a);
    rest /= a;
  }
  if (exact()) return;
  // The actions before them: uniform, from a generator keyed by this length and the code.
  Rng rng(mix64(key_ ^ mix64(code)));
  for (int k = 0; k < length_ - exact_digits_; ++k) out[k] = static_cast<int32_t>(rng.below(a));
}

LengthStream::LengthStream(int64_t num_actions, int length, uint64_t seed, uint64_t dense_limit,
                           std::shared_ptr<const Language> language)
    : codec_(num_actions, length, derive_seed(seed, {0}), language),
      space_(language ? language->count(length)
                      : saturating_pow(static_cast<uint64_t>(num_actions), length)),
      rng_(seed) {
  if (space_ <= dense_limit) {
    dense_.resize(space_);
    std::iota(dense_.begin(), dense_.end(), uint64_t{0});
    return;
  }
  int bits = 0;
  while (bits < 64 && (uint64_t{1} << bits) < codec_.codes()) ++bits;
  half_bits_ = (bits + 1) / 2;
  for (int r = 0; r < kRounds; ++r) keys_[r] = derive_seed(seed, {uint64_t(r) + 1});
}

// A keyed permutation of [0, 2^(2 half_bits)) (a balanced Feistel network), walked until it
// lands in [0, codes): a permutation of [0, codes). 2^(2 half_bits) < 4 codes, so a position
// takes fewer than 4 walks on average.
uint64_t LengthStream::permute(uint64_t position) const {
  const uint64_t mask = (uint64_t{1} << half_bits_) - 1;
  uint64_t x = position;
  do {
    uint64_t left = x >> half_bits_, right = x & mask;
    for (int r = 0; r < kRounds; ++r) {
      const uint64_t mixed = left ^ (mix64(right ^ keys_[r]) & mask);
      left = right;
      right = mixed;
    }
    x = (left << half_bits_) | right;
  } while (x >= codec_.codes());
  return x;
}

uint64_t LengthStream::next_code() {
  if (drawn_ >= positions()) throw std::logic_error("LengthStream: no sequence left");
  const uint64_t i = drawn_++;
  if (dense_.empty()) return permute(i);
  // One step of Fisher-Yates on the indices [0, space).
  const uint64_t j = i + rng_.below(space_ - i);
  const uint64_t chosen = dense_[j];
  dense_[j] = dense_[i];
  return chosen;
}

}  // namespace induct
