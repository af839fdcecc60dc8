// Stable content hashes (for store keys and sequence de-duplication).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "util/rng.hpp"

namespace induct {

// 64-bit FNV-1a followed by a mix; stable across runs and platforms.
inline uint64_t hash64(std::string_view bytes, uint64_t seed = 0) {
  uint64_t h = 0xcbf29ce484222325ULL ^ mix64(seed);
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  return mix64(h);
}

// A 128-bit content key as 32 hex digits.
inline std::string content_key(std::string_view bytes) {
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx",
                static_cast<unsigned long long>(hash64(bytes, 1)),
                static_cast<unsigned long long>(hash64(bytes, 2)));
  return out;
}

}  // namespace induct
