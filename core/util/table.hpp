// A table of strings rendered as aligned text, Markdown or CSV.
#pragma once

#include <string>
#include <vector>

namespace induct {

// The paper's mark of a value not learned (an N*, a kappa, a published value).
inline const std::string kNotLearned = "\u2013";  // en dash

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  std::string text() const;      // aligned columns for a terminal
  std::string markdown() const;  // GitHub-flavoured
  std::string csv() const;       // RFC 4180 quoting
};

}  // namespace induct
