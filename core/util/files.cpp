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
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : EIO;
      ::close(fd);
      fail(temporary + ": cannot write", error);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) fail(temporary + ": cannot write", errno);
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    fail(path + ": cannot replace the file", errno);
}

}  // namespace induct
