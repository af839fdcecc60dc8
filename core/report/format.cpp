#include "report/format.hpp"

#include <cmath>
#include <cstdio>

namespace induct {

std::string format_count(uint64_t n) {
  if (n < 1000) return std::to_string(n);
  const char* units[] = {"K", "M", "G", "T"};
  double value = static_cast<double>(n);
  int unit = -1;
  while (value >= 999.5 && unit < 3) {
    value /= 1000.0;
    ++unit;
  }
  char buffer[32];
  if (value < 9.95) {
    std::snprintf(buffer, sizeof buffer, "%.1f", value);
    std::string text = buffer;
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
    return text + units[unit];
  }
  std::snprintf(buffer, sizeof buffer, "%.0f", value);
  return buffer + std::string(units[unit]);
}

std::string format_fraction(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", x);
  std::string text = buffer;
  return text == "-0.00" ? "0.00" : text;
}

std::string format_nstar(bool learned, uint64_t nstar, bool certified) {
  if (!learned) return certified ? kNotLearned : kNotLearned + " (detector)";
  return (certified ? "" : "<=") + format_count(nstar);
}

}  // namespace induct
