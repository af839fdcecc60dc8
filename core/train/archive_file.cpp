#include "train/archive_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "util/hash.hpp"

namespace induct {

namespace {
const std::string kMagic = "induct-archive ";
}  // namespace

void write_archive_file(torch::serialize::OutputArchive& archive, const std::string& path) {
  std::ostringstream bytes;
  archive.save_to(bytes);
  const std::string payload = bytes.str();
  const std::string header =
      kMagic + content_key(payload) + " " + std::to_string(payload.size()) + "\n";
  const std::string temporary = path + "." + std::to_string(::getpid()) + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << header << payload;
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw std::runtime_error(path + ": cannot write it (disk full, or not writable)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw std::runtime_error(path + ": cannot replace it");
  }
}

namespace {

// The verified bytes of the archive in `path` (std::runtime_error with the reason otherwise).
std::string verified_payload(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read it");
  std::string header;
  std::getline(in, header);
  if (header.compare(0, kMagic.size(), kMagic) != 0)
    throw std::runtime_error("no digest header (written by an earlier induct, or not by induct)");
  std::istringstream fields(header.substr(kMagic.size()));
  std::string digest;
  size_t size = 0;
  if (!(fields >> digest >> size)) throw std::runtime_error("a malformed digest header");
  std::string payload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (payload.size() != size)
    throw std::runtime_error("cut short: " + std::to_string(payload.size()) + " of " +
                             std::to_string(size) + " bytes");
  if (content_key(payload) != digest)
    throw std::runtime_error("damaged: its bytes do not match their digest");
  return payload;
}

}  // namespace

std::string archive_file_problem(const std::string& path) {
  if (!std::filesystem::exists(path)) return "no such file";
  try {
    verified_payload(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

void read_archive_file(torch::serialize::InputArchive& archive, const std::string& path,
                       c10::optional<torch::Device> device) {
  std::istringstream bytes(verified_payload(path));
  try {
    archive.load_from(bytes, device);
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("not a LibTorch archive: ") + e.what_without_backtrace());
  }
}

}  // namespace induct
