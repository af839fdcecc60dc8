// The one random number generator of the core: seeded from the study's seeds, identical on
// every platform (std:: distributions are implementation-defined, so none are used).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace induct {

// splitmix64: the mixing step used to seed and to hash small keys.
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A seed derived from a base seed and stream labels, e.g. derive_seed(seed, {kLengths, n}):
// independent streams for independent purposes, so one stream's use never shifts another.
inline uint64_t derive_seed(uint64_t seed, std::initializer_list<uint64_t> labels) {
  uint64_t h = mix64(seed);
  for (uint64_t label : labels) h = mix64(h ^ mix64(label + 0x632be59bd9b4e019ULL));
  return h;
}

// The labels of derive_seed's independent streams, in one place so no two purposes share one.
enum StreamLabel : uint64_t {
  kLengthStream = 1,    // the sequences of one length (validation first, then training)
  kLengthChoice = 2,    // the lengths of a Uniform training set
  kDataOrder = 3,       // the order of batches
  kGeneralization = 4,  // fresh sequences for length generalization
  kProbe = 5,           // fresh sequences for probes, ablation and patching
  kPlateau = 6,         // the sequences the failure detector's chance loss is measured on
};

// xoshiro256** (Blackman and Vigna).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (auto& word : s_) word = mix64(x += 0x9e3779b97f4a7c15ULL);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, bound), bound >= 1, without modulo bias (Lemire's method).
  uint64_t below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      const uint64_t threshold = -bound % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // The generator's whole state, to save it and to go on from it later (training states).
  std::array<uint64_t, 4> state() const { return {s_[0], s_[1], s_[2], s_[3]}; }
  void set_state(const std::array<uint64_t, 4>& state) {
    for (size_t i = 0; i < 4; ++i) s_[i] = state[i];
  }

  // Fisher-Yates shuffle of [first, last).
  template <class It>
  void shuffle(It first, It last) {
    const auto n = static_cast<uint64_t>(last - first);
    for (uint64_t i = n; i > 1; --i) std::swap(first[i - 1], first[below(i)]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace induct
