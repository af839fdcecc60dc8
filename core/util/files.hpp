// Files written whole or not at all.
#pragma once

#include <string>

namespace induct {

// Writes `content` to `path` atomically (a temporary file renamed over the target), so a
// kill never leaves a half-written report.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace induct
