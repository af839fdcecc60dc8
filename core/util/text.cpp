#include "util/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace induct {

std::string format_number(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

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
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0)
      text.resize(text.size() - 2);
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

double mean_of_finite(const std::vector<double>& values) {
  double sum = 0;
  size_t n = 0;
  for (double x : values)
    if (std::isfinite(x)) sum += x, ++n;
  return n ? sum / static_cast<double>(n) : std::nan("");
}

std::string format_spread(const std::vector<double>& values) {
  double low = INFINITY, high = -INFINITY;
  for (double x : values)
    if (std::isfinite(x)) low = std::min(low, x), high = std::max(high, x);
  if (!(low <= high)) return "";
  const std::string mean = format_fraction(mean_of_finite(values)), lo = format_fraction(low),
                    hi = format_fraction(high);
  return lo == hi ? mean : mean + " (" + lo + " to " + hi + ")";
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string format_duration(double seconds) {
  char buffer[32];
  const long s = static_cast<long>(seconds + 0.5);
  if (s < 60)
    std::snprintf(buffer, sizeof buffer, "%lds", s);
  else if (s < 3600)
    std::snprintf(buffer, sizeof buffer, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  return buffer;
}

}  // namespace induct
