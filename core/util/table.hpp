// A table of strings rendered as aligned text, Markdown or CSV.
#pragma once

#include <string>
#include <vector>

namespace induct {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  std::string text() const;      // aligned columns for a terminal
  std::string markdown() const;  // GitHub-flavoured
  std::string csv() const;       // RFC 4180 quoting
};

}  // namespace induct
