#include "util/table.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace induct {

namespace {
// Display width: UTF-8 code points ("–" is one column, three bytes).
size_t width_of(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<size_t> widths(const Table& t) {
  std::vector<size_t> w(t.header.size(), 0);
  for (size_t c = 0; c < t.header.size(); ++c) w[c] = width_of(t.header[c]);
  for (const auto& row : t.rows)
    for (size_t c = 0; c < row.size() && c < w.size(); ++c) w[c] = std::max(w[c], width_of(row[c]));
  return w;
}

std::string pad(const std::string& s, size_t width) {
  const size_t have = width_of(s);
  return s + std::string(width > have ? width - have : 0, ' ');
}
}  // namespace

std::string Table::text() const {
  auto w = widths(*this);
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < w.size(); ++c)
      out += (c ? "  " : "") + pad(c < cells.size() ? cells[c] : "", w[c]);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  std::string rule;
  for (size_t c = 0; c < w.size(); ++c) rule += (c ? "  " : "") + std::string(w[c], '-');
  out += rule + "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string Table::markdown() const {
  auto w = widths(*this);
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t c = 0; c < w.size(); ++c) {
      out += ' ';
      out += pad(c < cells.size() ? cells[c] : "", w[c]);
      out += " |";
    }
    return out + "\n";
  };
  std::string out = line(header) + "|";
  for (size_t c = 0; c < w.size(); ++c) out += std::string(w[c] + 2, '-') + "|";
  out += "\n";
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string Table::csv() const {
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) out += ',';
      out += quote(cells[c]);
    }
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

}  // namespace induct
