#include "train/archive_file.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "util/hash.hpp"
#include "util/process.hpp"

namespace induct {

namespace {
const std::string kMagic = "induct-archive ";
const std::string kPartial = ".partial";
}  // namespace

void write_archive_file(torch::serialize::OutputArchive& archive, const std::string& path) {
  std::ostringstream bytes;
  archive.save_to(bytes);
  const std::string payload = bytes.str();
  const std::string header =
      kMagic + content_key(payload) + " " + std::to_string(payload.size()) + "\n";
  const std::string temporary =
      path + "." + host_name() + "." + std::to_string(::getpid()) + kPartial;
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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error("a folder, not a file");
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

size_t remove_stale_partial_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  const std::string host = "." + host_name();
  size_t removed = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_error;
    if (name.size() <= kPartial.size() ||
        name.compare(name.size() - kPartial.size(), kPartial.size(), kPartial) != 0 ||
        !it->is_regular_file(type_error))
      continue;
    // name: <file>.<host>.<pid>.partial (or <file>.<pid>.partial, written before the host)
    const std::string stem = name.substr(0, name.size() - kPartial.size());
    const size_t dot = stem.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string digits = stem.substr(dot + 1);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const std::string writer = stem.substr(0, dot);  // <file>.<host> or <file>
    const bool this_host = writer.size() > host.size() &&
                           writer.compare(writer.size() - host.size(), host.size(), host) == 0;
    const bool unnamed = writer.size() > 3 && writer.compare(writer.size() - 3, 3, ".pt") == 0;
    if (!this_host && !unnamed) continue;  // another machine's
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours)
    std::error_code removal;
    if (fs::remove(it->path(), removal)) ++removed;
  }
  return removed;
}

}  // namespace induct
