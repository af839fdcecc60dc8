// Numbers and durations as tables and messages print them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace induct {

// "%.6g" for tables and messages (stored values use yaml::exact, the shortest round trip).
std::string format_number(double value, int digits = 6);

// 14, 999, 1K, 1.3K, 16K, 250K, 2M, 16M, 1.5G: three significant figures at most, one decimal
// below 10 of a unit.
std::string format_count(uint64_t n);

// 0.00 .. 1.00 with two decimals (negative values, worse than chance, keep their sign).
std::string format_fraction(double x);

// The mean of the finite values (NaN when there are none).
double mean_of_finite(const std::vector<double>& values);

// Fractions over several runs: "0.88" for one value (or several that print the same),
// "0.88 (0.80 to 0.95)" for several: the mean and the range; "" without a finite value.
std::string format_spread(const std::vector<double>& values);

// 59s, 4m05s, 2h03m
std::string format_duration(double seconds);

// A message as a terminal should show it: control characters other than newline and tab as
// \xNN (a name with a hidden byte then differs visibly from the name it imitates).
std::string printable(const std::string& text);

}  // namespace induct
