#include "util/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace induct {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp";
  const auto fail = [&](const std::string& what, int error) {
    std::remove(temporary.c_str());
    throw std::runtime_error(
        what + " (" + std::strerror(error) +
        (error == ENOSPC ? ": no free space or no free inodes, `df -h; df -i`" : "") + ")");
  };
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(temporary + ": cannot write", errno);
  if (!write_all(fd, content.data(), content.size())) {
    const int error = errno;
    ::close(fd);
    fail(temporary + ": cannot write", error);
  }
  if (::close(fd) != 0) fail(temporary + ": cannot write", errno);
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    fail(path + ": cannot replace the file", errno);
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace induct
