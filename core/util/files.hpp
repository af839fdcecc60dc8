// Files written whole or not at all.
#pragma once

#include <cstddef>
#include <string>

namespace induct {

// Writes `content` to `path` atomically (a temporary file renamed over the target), so a
// kill never leaves a half-written report.
void write_file_atomically(const std::string& path, const std::string& content);

// Writes all `size` bytes to the descriptor, again after a signal interrupts it; false with
// errno set when a write fails (EIO for one that writes nothing).
bool write_all(int fd, const char* data, size_t size);

}  // namespace induct
