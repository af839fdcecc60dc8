// Numbers and durations as tables and messages print them.
#pragma once

#include <cstdint>
#include <string>

namespace induct {

// "%.6g" for tables and messages (stored values use yaml::exact, the shortest round trip).
std::string format_number(double value, int digits = 6);

// 14, 999, 1K, 1.3K, 16K, 250K, 2M, 16M, 1.5G: three significant figures at most, one decimal
// below 10 of a unit.
std::string format_count(uint64_t n);

// 0.00 .. 1.00 with two decimals (negative values, worse than chance, keep their sign).
std::string format_fraction(double x);

// 59s, 4m05s, 2h03m
std::string format_duration(double seconds);

// A message as a terminal should show it: control characters other than newline and tab as
// \xNN (a name with a hidden byte then differs visibly from the name it imitates).
std::string printable(const std::string& text);

}  // namespace induct
