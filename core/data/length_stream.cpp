#include "data/length_stream.hpp"

#include <numeric>
#include <stdexcept>

#include "util/hash.hpp"

namespace induct {

namespace {
// Spaces up to this size keep the permutation in a vector (32 MiB at most).
constexpr uint64_t kDenseLimit = uint64_t{1} << 22;
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

LengthStream::LengthStream(int64_t num_actions, int length, uint64_t seed)
    : num_actions_(num_actions),
      length_(length),
      space_(saturating_pow(static_cast<uint64_t>(num_actions), length)),
      rng_(seed) {
  if (num_actions < 1 || length < 1) throw std::invalid_argument("LengthStream: empty space");
  if (space_ <= kDenseLimit) {
    dense_.resize(space_);
    std::iota(dense_.begin(), dense_.end(), uint64_t{0});
  }
}

uint64_t LengthStream::index_at(uint64_t position) {
  if (!dense_.empty()) return dense_[position];
  auto found = displaced_.find(position);
  return found == displaced_.end() ? position : found->second;
}

void LengthStream::next(int32_t* out) {
  if (space_ == kUnbounded) {
    // A^n >= 2^64: collisions are rare; a repeated hash (even a false one) is redrawn, so no
    // sequence is ever handed out twice.
    for (;;) {
      for (int k = 0; k < length_; ++k)
        out[k] = static_cast<int32_t>(rng_.below(static_cast<uint64_t>(num_actions_)));
      std::string_view bytes(reinterpret_cast<const char*>(out), sizeof(int32_t) * length_);
      if (seen_.insert(hash64(bytes)).second) break;
    }
    ++drawn_;
    return;
  }
  if (drawn_ >= space_) throw std::logic_error("LengthStream: no sequence left");
  // One step of Fisher-Yates on the virtual array of indices [0, space).
  const uint64_t i = drawn_;
  const uint64_t j = i + rng_.below(space_ - i);
  const uint64_t chosen = index_at(j);
  const uint64_t current = index_at(i);
  if (!dense_.empty()) {
    dense_[j] = current;
  } else {
    displaced_[j] = current;
    displaced_.erase(i);  // position i is never read again
  }
  ++drawn_;
  // Index -> actions, most significant digit first.
  uint64_t rest = chosen;
  for (int k = length_ - 1; k >= 0; --k) {
    out[k] = static_cast<int32_t>(rest % static_cast<uint64_t>(num_actions_));
    rest /= static_cast<uint64_t>(num_actions_);
  }
}

}  // namespace induct
