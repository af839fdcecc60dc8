#include "util/files.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace induct {

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) throw std::runtime_error(temporary + ": cannot write");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw std::runtime_error(path + ": cannot replace the file");
}

}  // namespace induct
