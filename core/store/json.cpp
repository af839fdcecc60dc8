#include "store/json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace induct {

namespace {

// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(const std::string& s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

void write(const YAML::Node& node, std::string& out) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      out += '{';
      bool first = true;
      for (const auto& entry : node) {
        if (!first) out += ',';
        first = false;
        out += json_string(entry.first.Scalar());
        out += ':';
        write(entry.second, out);
      }
      out += '}';
      return;
    }
    case YAML::NodeType::Sequence: {
      out += '[';
      for (size_t i = 0; i < node.size(); ++i) {
        if (i) out += ',';
        write(node[i], out);
      }
      out += ']';
      return;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!") {  // quoted: a string whatever it looks like
        out += json_string(s);
      } else if (s == "true" || s == "false") {
        out += s;
      } else if (s == "null" || s == "~") {
        out += "null";
      } else if (is_json_number(s)) {
        out += s;
      } else {
        out += json_string(s);
      }
      return;
    }
    default:
      out += "null";
  }
}

}  // namespace

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string to_json(const YAML::Node& node) {
  std::string out;
  write(node, out);
  return out;
}

}  // namespace induct
