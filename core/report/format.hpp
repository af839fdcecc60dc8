// Numbers as the paper prints them.
#pragma once

#include <cstdint>
#include <string>

namespace induct {

// The paper's "not learned" mark.
inline const std::string kNotLearned = "\u2013";  // en dash

// 14, 999, 1K, 1.3K, 16K, 250K, 2M, 16M, 1.5G: three significant figures at most, one decimal
// below 10 of a unit.
std::string format_count(uint64_t n);

// 0.00 .. 1.00 with two decimals (negative values, worse than chance, keep their sign).
std::string format_fraction(double x);

}  // namespace induct
