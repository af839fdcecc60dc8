#include "induct/options.hpp"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <vector>

#include "options_yaml.hpp"

namespace induct {

namespace {
std::string one_line(const std::string& message) {
  std::string out;
  for (const char c : message) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else
      out += c;
  }
  return out;
}
}  // namespace

ConfigError::ConfigError(const std::string& message) : std::runtime_error(one_line(message)) {}
ConfigError::ConfigError(const char* message) : ConfigError(std::string(message)) {}
ConfigError::~ConfigError() = default;

namespace {

// Shared by every section of one document.
struct Source {
  std::string name;    // the file, as the user named it
  std::string folder;  // the file's folder, absolute ("" for a document not read from a file)
  std::map<std::string, std::string> overrides;  // dotted path -> "--set path=value"
  // A sequence in the document's memory that holds every mapping made after loading. When a
  // node is placed into another, yaml-cpp's receiving memory takes in every node of the given
  // one's: a mapping made outside the document that receives one of its nodes copies the whole
  // document's node set, and the document then shares that growing set. Made here, a mapping
  // already shares the document's memory, so a grid point costs its path, not the document
  // (5,000 grid points took minutes).
  YAML::Node arena{YAML::NodeType::Sequence};
};

// A new, empty mapping in the memory of `source`'s document.
YAML::Node fresh_map(Source& source) {
  YAML::Node made(YAML::NodeType::Map);
  source.arena.push_back(made);  // the arena absorbs `made`'s memory (one node)
  return made;
}

std::string join_path(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string format_mark(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t cost = std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

struct Options::Impl {
  YAML::Node node;  // a mapping, or null/undefined for an empty section
  std::shared_ptr<const Source> source;
  std::string path;  // dotted path of this section from the root ("" for the root)
  YAML::Mark mark;   // where the section is (for keys that are absent)

  // What was read, for reject_unknown_keys() and resolved().
  std::vector<std::string> read_order;
  std::set<std::string> read;
  std::map<std::string, YAML::Node> values;
  std::map<std::string, std::shared_ptr<Impl>> children;

  // The key's node, undefined when absent; a key written without a value ("hidden:") is a
  // null node, which every reader refuses (it is neither the default nor a value).
  YAML::Node lookup(const std::string& key) const {
    if (!node || !node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node& map = node;
    return map[key];
  }

  // lookup() for a reader of a value: absent is undefined, no value is an error.
  YAML::Node value_of(const std::string& key) const {
    YAML::Node value = lookup(key);
    if (value && value.IsNull())
      fail(key, "has no value (write one, or remove the key to use the default)");
    return value;
  }

  void mark_read(const std::string& key) {
    if (read.insert(key).second) read_order.push_back(key);
  }

  // The --set that placed `full_path` (or a section holding it), or "".
  std::string override_for(const std::string& full_path) const {
    for (const auto& [path_set, text] : source->overrides) {
      if (full_path == path_set || full_path.rfind(path_set + ".", 0) == 0) return text;
    }
    return {};
  }
  // The --set that placed `full_path` or a key under it, or "".
  std::string override_within(const std::string& full_path) const {
    std::string found = override_for(full_path);
    for (const auto& [path_set, text] : source->overrides)
      if (found.empty() && path_set.rfind(full_path + ".", 0) == 0) found = text;
    return found;
  }

  std::string where(const std::string& key) const {
    std::string full = join_path(path, key);
    std::string via = override_for(full);
    if (!via.empty()) return via;
    YAML::Node value = lookup(key);
    if (value) return format_mark(source->name, value.Mark());
    return format_mark(source->name, mark);
  }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw ConfigError(where(key) + ": " + join_path(path, key) + ": " + message);
  }
};

namespace {

// A value from the document as a message quotes it: on one line (a newline as \n, other
// control bytes as \xNN) and at most 60 characters.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == 60) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return quoted(node.Scalar());
    default:
      return "nothing";
  }
}

// Strict number parsing: the whole scalar must be the number, written in decimal (yaml-cpp's
// as<> accepts octal and hex through iostreams, strtod hex floats such as 0x10 and words such
// as "infinity"; a study file means decimal, and YAML's .inf and .nan).
bool parse_double(const std::string& text, double& out) {
  if (text.empty()) return false;
  std::string t = text;
  if (t == ".inf" || t == "+.inf") t = "inf";
  if (t == "-.inf") t = "-inf";
  if (t == ".nan" || t == ".NaN") t = "nan";
  const bool word = t == "inf" || t == "-inf" || t == "nan";
  if (!word && t.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(t.c_str(), &end);
  return end == t.c_str() + t.size() && errno != ERANGE;
}

template <class T>
bool parse_integer(const std::string& text, T& out) {
  if (text.empty()) return false;
  if (std::is_unsigned_v<T> && text[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  bool whole = end == text.c_str() + text.size() && errno != ERANGE;
  if (!whole) {
    // 1e6, 16e6 and 2.0 are integers when written as floats.
    double d;
    if (!parse_double(text, d) || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18)
      return false;
    value = static_cast<long long>(d);
  }
  if (value < static_cast<long long>(std::numeric_limits<T>::min()) ||
      (value > 0 && static_cast<unsigned long long>(value) >
                        static_cast<unsigned long long>(std::numeric_limits<T>::max())))
    return false;
  out = static_cast<T>(value);
  return true;
}

// Decodes a scalar; errors read "<at>: <name>: expected ..., got ...".
template <class T>
T decode(const YAML::Node& node, const std::string& at, const std::string& name) {
  auto wrong = [&](const char* expected) -> T {
    throw ConfigError(at + ": " + name + ": expected " + expected + ", got " + describe(node));
  };
  if constexpr (std::is_same_v<T, std::string>) {
    if (!node.IsScalar()) return wrong("a string");
    return node.Scalar();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!node.IsScalar()) return wrong("true or false");
    const std::string& s = node.Scalar();
    if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "off") return false;
    return wrong("true or false");
  } else if constexpr (std::is_floating_point_v<T>) {
    double d;
    if (!node.IsScalar() || !parse_double(node.Scalar(), d)) return wrong("a number");
    return static_cast<T>(d);
  } else {
    static_assert(std::is_integral_v<T>);
    T value;
    if (!node.IsScalar() || !parse_integer(node.Scalar(), value))
      return wrong(std::is_unsigned_v<T> ? "a non-negative integer" : "an integer");
    return value;
  }
}

template <class T>
YAML::Node encode(const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    return YAML::Node(yaml::exact(static_cast<double>(value)));
  } else {
    return YAML::Node(value);
  }
}

}  // namespace

Options::Options() : impl_(std::make_shared<Impl>()) {
  auto source = std::make_shared<Source>();
  source->name = "<defaults>";
  impl_->source = source;
}
Options::~Options() = default;
Options::Options(const Options&) = default;
Options& Options::operator=(const Options&) = default;
Options::Options(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

template <class T>
T Options::get(const std::string& key, const T& fallback) const {
  impl_->mark_read(key);
  YAML::Node node = impl_->value_of(key);
  T value = node ? decode<T>(node, impl_->where(key), path(key)) : fallback;
  impl_->values[key] = encode(value);
  return value;
}

template <class T>
T Options::require(const std::string& key) const {
  impl_->mark_read(key);
  YAML::Node node = impl_->value_of(key);
  if (!node) impl_->fail(key, "is required");
  T value = decode<T>(node, impl_->where(key), path(key));
  impl_->values[key] = encode(value);
  return value;
}

template <class T>
std::vector<T> Options::get_list(const std::string& key, const std::vector<T>& fallback) const {
  impl_->mark_read(key);
  YAML::Node node = impl_->value_of(key);
  std::vector<T> values;
  if (!node) {
    values = fallback;
  } else if (node.IsSequence()) {
    std::string via = impl_->override_for(path(key));
    for (size_t i = 0; i < node.size(); ++i) {
      std::string at = via.empty() ? format_mark(impl_->source->name, node[i].Mark()) : via;
      if (node[i].IsNull())
        throw ConfigError(at + ": " + path(key) + "[" + std::to_string(i) + "]: has no value");
      values.push_back(decode<T>(node[i], at, path(key) + "[" + std::to_string(i) + "]"));
    }
  } else {
    values.push_back(decode<T>(node, impl_->where(key), path(key)));
  }
  YAML::Node list(YAML::NodeType::Sequence);
  list.SetStyle(YAML::EmitterStyle::Flow);
  for (const T& v : values) list.push_back(encode(v));
  impl_->values[key] = list;
  return values;
}

template <class T>
std::vector<std::vector<T>> Options::require_table(const std::string& key) const {
  impl_->mark_read(key);
  YAML::Node node = impl_->value_of(key);
  if (!node) impl_->fail(key, "is required");
  if (!node.IsSequence() || node.size() == 0)
    throw ConfigError(impl_->where(key) + ": " + path(key) +
                      ": expected a list of rows, e.g. [[0, 1], [1, 0]]");
  const std::string via = impl_->override_for(path(key));
  auto at = [&](const YAML::Node& n) {
    return via.empty() ? format_mark(impl_->source->name, n.Mark()) : via;
  };
  std::vector<std::vector<T>> rows;
  YAML::Node table(YAML::NodeType::Sequence);
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string row_name = path(key) + "[" + std::to_string(i) + "]";
    if (!node[i].IsSequence())
      throw ConfigError(at(node[i]) + ": " + row_name + ": expected a row (a list of values)");
    rows.emplace_back();
    YAML::Node row(YAML::NodeType::Sequence);
    row.SetStyle(YAML::EmitterStyle::Flow);
    for (size_t j = 0; j < node[i].size(); ++j) {
      const std::string name = row_name + "[" + std::to_string(j) + "]";
      if (node[i][j].IsNull()) throw ConfigError(at(node[i][j]) + ": " + name + ": has no value");
      const T value = decode<T>(node[i][j], at(node[i][j]), name);
      rows.back().push_back(value);
      row.push_back(encode(value));
    }
    table.push_back(row);
  }
  impl_->values[key] = table;
  return rows;
}

bool Options::has(const std::string& key) const { return static_cast<bool>(impl_->lookup(key)); }

std::vector<std::string> Options::keys() const {
  std::vector<std::string> out;
  if (impl_->node && impl_->node.IsMap())
    for (const auto& entry : impl_->node) out.push_back(entry.first.Scalar());
  return out;
}

Options Options::section(const std::string& key) const {
  impl_->mark_read(key);
  auto found = impl_->children.find(key);
  if (found != impl_->children.end()) return Options(found->second);
  YAML::Node node = impl_->lookup(key);  // "run:" with nothing under it is an empty section
  if (node && !node.IsNull() && !node.IsMap())
    impl_->fail(key, "expected a mapping of keys, got " + describe(node));
  auto child = std::make_shared<Impl>();
  child->node = node ? node : YAML::Node(YAML::NodeType::Null);
  child->source = impl_->source;
  child->path = join_path(impl_->path, key);
  child->mark = node ? node.Mark() : impl_->mark;
  impl_->children[key] = child;
  return Options(child);
}

void Options::claim(const std::string& key) const { impl_->mark_read(key); }

void Options::fail(const std::string& key, const std::string& message) const {
  impl_->fail(key, message);
}

std::string Options::where(const std::string& key) const { return impl_->where(key); }

namespace {

// A 128-bit digest (two FNV-1a streams, each finished by SplitMix64's mixer) as 32 hex digits.
class Digest {
 public:
  void add(const char* bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const auto byte = static_cast<unsigned char>(bytes[i]);
      a_ = (a_ ^ byte) * 0x100000001b3ULL;
      b_ = (b_ ^ byte) * 0x100000001b3ULL;
    }
    size_ += n;
  }
  std::string hex() const {
    const auto finish = [](uint64_t z) {
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    };
    char out[33];
    std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(finish(a_)),
                  static_cast<unsigned long long>(finish(b_ ^ size_)));
    return out;
  }

 private:
  uint64_t a_ = 0xcbf29ce484222325ULL, b_ = 0x84222325cbf29ce4ULL, size_ = 0;
};

// The digest of a file's bytes; "" when the file cannot be read. Cached by path, size and
// modification time: a study builds its models many times from one file.
std::string file_digest(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto modified = fs::last_write_time(path, ec);
  if (ec) return "";
  static std::map<std::string, std::tuple<uintmax_t, fs::file_time_type, std::string>> cache;
  auto& cached = cache[path.string()];
  if (std::get<0>(cached) == size && std::get<1>(cached) == modified &&
      !std::get<2>(cached).empty())
    return std::get<2>(cached);
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  Digest digest;
  std::vector<char> buffer(1 << 16);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    digest.add(buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return "";
  cached = {size, modified, digest.hex()};
  return std::get<2>(cached);
}

}  // namespace

namespace {

// get_file and get_folder: the path resolved, checked and recorded with its digest.
std::string get_path(const Options& options, Options::Impl& impl, const std::string& key,
                     const std::vector<std::string>& inside) {
  namespace fs = std::filesystem;
  const std::string what = inside.empty() ? "the path of a file" : "the path of a folder";
  impl.mark_read(key);
  YAML::Node node = impl.value_of(key);
  if (!node) impl.fail(key, "is required (" + what + ")");
  const auto text = decode<std::string>(node, impl.where(key), options.path(key));
  if (text.empty()) impl.fail(key, "is empty (" + what + ")");
  fs::path file(text);
  // Written in the file (or its grid): relative to the file's folder; by a --set: to the
  // working directory.
  const bool from_file =
      impl.override_for(options.path(key)).rfind("--set ", 0) != 0 && !impl.source->folder.empty();
  std::error_code ec;
  if (file.is_relative())
    file = (from_file ? fs::path(impl.source->folder) : fs::current_path(ec)) / file;
  file = file.lexically_normal();
  const std::string shown =
      "'" + text + "'" + (text == file.string() ? "" : " (" + file.string() + ")");
  if (!fs::exists(file, ec))
    impl.fail(key, shown + ": no such " + (inside.empty() ? "file" : "folder"));
  std::string digest;
  if (inside.empty()) {
    if (!fs::is_regular_file(file, ec)) impl.fail(key, shown + ": not a file");
    digest = file_digest(file);
    if (digest.empty()) impl.fail(key, shown + ": cannot read the file");
  } else {
    if (!fs::is_directory(file, ec)) impl.fail(key, shown + ": not a folder");
    Digest combined;
    for (const auto& name : inside) {
      const std::string one = file_digest(file / name);
      if (one.empty()) impl.fail(key, shown + ": no readable " + name + " in it");
      const std::string entry = name + "=" + one + ";";
      combined.add(entry.data(), entry.size());
    }
    digest = combined.hex();
  }
  // The digest is part of the resolved options, and so of every trial's key: a changed file is
  // new trials, never a reuse of results from the old one. Written in the study, it pins it.
  const std::string digest_key = key + "_digest";
  impl.mark_read(digest_key);
  YAML::Node pinned = impl.value_of(digest_key);
  if (pinned) {
    const auto expected =
        decode<std::string>(pinned, impl.where(digest_key), options.path(digest_key));
    if (expected != digest)
      impl.fail(digest_key, "the " + std::string(inside.empty() ? "file " : "folder ") +
                                file.string() + " has digest " + digest + ", not " + expected +
                                ": it changed since this digest was taken");
  }
  impl.values[key] = YAML::Node(file.string());
  impl.values[digest_key] = YAML::Node(digest);
  return file.string();
}

}  // namespace

std::string Options::get_file(const std::string& key) const {
  return get_path(*this, *impl_, key, {});
}

std::string Options::get_folder(const std::string& key,
                                const std::vector<std::string>& files) const {
  return get_path(*this, *impl_, key, files);
}

std::string Options::path(const std::string& key) const { return join_path(impl_->path, key); }

void Options::reject_unknown_keys(const std::string& owner) const {
  if (impl_->node && impl_->node.IsMap()) {
    for (const auto& entry : impl_->node) {
      const std::string key = entry.first.Scalar();
      if (impl_->read.count(key)) continue;
      std::string at = impl_->override_within(join_path(impl_->path, key));
      if (at.empty()) at = format_mark(impl_->source->name, entry.first.Mark());
      std::string message = at + ": unknown key '" + join_path(impl_->path, key) + "'";
      std::string best;
      size_t best_distance = 3;
      for (const auto& known : impl_->read_order) {
        size_t d = edit_distance(key, known);
        if (d < best_distance) best_distance = d, best = known;
      }
      if (!best.empty()) message += " (did you mean '" + best + "'?)";
      message += "; " + owner + " reads";
      if (impl_->read_order.empty()) message += " no keys here";
      for (size_t i = 0; i < impl_->read_order.size(); ++i)
        message += (i ? ", " : " ") + impl_->read_order[i];
      throw ConfigError(message);
    }
  }
  for (const auto& [key, child] : impl_->children)
    Options(child).reject_unknown_keys(owner.empty() ? key : owner);
}

#define INDUCT_OPTIONS_INSTANTIATE(T)                                                            \
  template T Options::get<T>(const std::string&, const T&) const;                                \
  template T Options::require<T>(const std::string&) const;                                      \
  template std::vector<T> Options::get_list<T>(const std::string&, const std::vector<T>&) const; \
  template std::vector<std::vector<T>> Options::require_table<T>(const std::string&) const;
INDUCT_OPTIONS_INSTANTIATE(bool)
INDUCT_OPTIONS_INSTANTIATE(int)
INDUCT_OPTIONS_INSTANTIATE(long)
INDUCT_OPTIONS_INSTANTIATE(long long)
INDUCT_OPTIONS_INSTANTIATE(unsigned long)
INDUCT_OPTIONS_INSTANTIATE(double)
INDUCT_OPTIONS_INSTANTIATE(std::string)
#undef INDUCT_OPTIONS_INSTANTIATE

// ---------------------------------------------------------------------------------------
// The YAML side (host only).

namespace yaml {
namespace {

// Walks a parsed document as its readers will: refuses duplicate keys and a document that
// expands past kMaxNodes (an alias repeats the node it names, so nine aliases of nine
// aliases... expand a small file to billions of nodes: walking them would hang the host).
constexpr size_t kMaxNodes = 100'000;
constexpr size_t kMaxDocumentBytes = 1 << 20;

void check_document(const YAML::Node& root, const std::string& name) {
  size_t nodes = 0;
  std::function<void(const YAML::Node&)> walk = [&](const YAML::Node& node) {
    if (++nodes > kMaxNodes)
      throw ConfigError(format_mark(name, node.Mark()) + ": the document expands to more than " +
                        std::to_string(kMaxNodes) +
                        " YAML nodes (through aliases, '*name', that repeat what they name); "
                        "a study needs far fewer");
    if (node.IsMap()) {
      std::map<std::string, YAML::Mark> seen;
      for (const auto& entry : node) {
        const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
        auto [it, fresh] = seen.emplace(key, entry.first.Mark());
        if (!fresh)
          throw ConfigError(format_mark(name, entry.first.Mark()) + ": duplicate key '" + key +
                            "' (first at line " + std::to_string(it->second.line + 1) + ")");
        walk(entry.first);
        walk(entry.second);
      }
    } else if (node.IsSequence()) {
      for (const auto& element : node) walk(element);
    }
  };
  walk(root);
}

// Sets the value at a dotted path, creating mappings on the way; errors name `description`.
// The mappings on the path are copied first (their entries stay shared), so documents derived
// from one parsed document (grid points) never change it or each other.
void assign(YAML::Node& root, const std::string& path, const YAML::Node& value,
            const std::string& description, Source& source) {
  std::vector<std::string> parts;
  std::stringstream stream(path);
  for (std::string part; std::getline(stream, part, '.');) {
    if (part.empty()) throw ConfigError(description + ": empty key in '" + path + "'");
    parts.push_back(part);
  }
  if (parts.empty()) throw ConfigError(description + ": empty key");
  auto copy_of = [&](const YAML::Node& map) {
    YAML::Node copy = fresh_map(source);
    for (const auto& entry : map) copy[entry.first] = entry.second;  // handles: shared
    return copy;
  };
  // yaml-cpp nodes are handles: assigning a node into a mapping shares it, and `a = b` writes
  // b's value into the node of a; reset() rebinds a handle.
  root.reset(copy_of(root));
  YAML::Node current = root;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    // A mapping may spell the rest of the path as one dotted key (a grid's "data.L"): the
    // override replaces that key rather than adding a second spelling of it.
    std::string rest = parts[i];
    for (size_t j = i + 1; j < parts.size(); ++j) rest += "." + parts[j];
    if (const YAML::Node view = current;
        view.IsMap() && view[rest]) {  // const: looks, adds nothing
      current[rest] = value;
      source.overrides[path] = description;
      return;
    }
    YAML::Node next = current[parts[i]];
    if (next && !next.IsNull() && !next.IsMap())
      throw ConfigError(description + ": '" + parts[i] + "' is not a mapping in the study");
    YAML::Node fresh = next && next.IsMap() ? copy_of(next) : fresh_map(source);
    current[parts[i]] = fresh;
    current.reset(fresh);
  }
  current[parts.back()] = value;
  source.overrides[path] = description;
}

// Parses at most one document, bounded. yaml-cpp 0.7's LoadAll loops without end, adding a null
// document each time (a 24 GB process, then the kernel's kill), on a token no node can start
// with outside [...] and {...} (",", "---\n,", "&a ,", "[1], 2", "  a: 1\n, b"): its parser
// leaves the token unread and starts the next document on it again. Here the documents are
// counted by their start marks (three at most): a document that starts where the one before
// it started is that token, refused with its line and column, and a second document is
// refused as such. Only then is the first document built (YAML::Load reads one document).
YAML::Node parse_document(const std::string& text, const std::string& name, bool positions = true) {
  struct Starts : YAML::EventHandler {
    std::vector<YAML::Mark> marks;
    void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } starts;
  {
    std::stringstream stream(text);
    YAML::Parser parser(stream);
    while (starts.marks.size() < 3 && parser.HandleNextDocument(starts)) {
    }
  }
  const auto where = [&](const YAML::Mark& mark) {
    return positions ? format_mark(name, mark) : name;
  };
  for (size_t i = 1; i < starts.marks.size(); ++i) {
    const YAML::Mark& mark = starts.marks[i];
    if (mark.pos != starts.marks[i - 1].pos) continue;
    const char c = mark.pos >= 0 && static_cast<size_t>(mark.pos) < text.size()
                       ? text[static_cast<size_t>(mark.pos)]
                       : '?';
    throw ConfigError(where(mark) + ": YAML syntax error: " +
                      (c == ','
                           ? std::string("',' outside [...] and {...}, where it separates nothing")
                           : "unexpected '" + std::string(1, c) + "'"));
  }
  if (starts.marks.size() > 1)
    throw ConfigError(where(starts.marks[1]) +
                      ": a second YAML document (after '---'); a study file holds one");
  return YAML::Load(text);
}

// The length of the valid UTF-8 sequence at text[i] (0: none: a stray continuation byte, an
// overlong form, a surrogate, past U+10FFFF or cut short).
size_t utf8_length(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned long code = 0;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, code = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, code = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, code = c & 0x07;
  else
    return 0;
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  if ((n == 3 && (code < 0x800 || (code >= 0xD800 && code <= 0xDFFF))) ||
      (n == 4 && (code < 0x10000 || code > 0x10FFFF)))
    return 0;
  return n;
}

// The text with each byte that is not UTF-8 as \xNN (for a message that quotes it).
std::string escape_invalid_utf8(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(text, i);
    if (n > 0) {
      out += text.substr(i, n);
      i += n;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(text[i++]));
    out += hex;
  }
  return out;
}

// yaml-cpp replaces bytes that are not UTF-8 by U+FFFD without a word: a study file (and a
// --set) must be UTF-8, and the first byte that is not is named by its line and column.
void refuse_invalid_utf8(const std::string& text, const std::string& name, bool positions = true) {
  int line = 1, column = 1;
  for (size_t i = 0; i < text.size(); ++column) {
    if (text[i] == '\0')  // UTF-16 and UTF-32 without a byte-order mark look like this
      throw ConfigError(
          name +
          (positions ? ":" + std::to_string(line) + ":" + std::to_string(column) : std::string()) +
          ": a NUL byte (UTF-16 or UTF-32 text?); a study file must be UTF-8 text");
    const size_t n = utf8_length(text, i);
    if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[i]));
      throw ConfigError(
          name +
          (positions ? ":" + std::to_string(line) + ":" + std::to_string(column) : std::string()) +
          ": not UTF-8 (byte " + hex + "); a study file must be UTF-8 text");
    }
    if (text[i] == '\n') ++line, column = 0;
    i += n;
  }
}

void apply_override(YAML::Node& root, const std::string& text, Source& source) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set " + text + ": expected key.path=value");
  const std::string given = text.substr(eq + 1);
  if (given.find_first_not_of(" \t") == std::string::npos)
    throw ConfigError("--set " + text +
                      ": no value after '=' (to use the default, leave the "
                      "--set out)");
  refuse_invalid_utf8(text, "--set " + escape_invalid_utf8(text), false);
  YAML::Node value;
  try {
    value = parse_document(given, "--set " + text, false);
  } catch (const YAML::DeepRecursion& e) {
    throw ConfigError("--set " + text + ": the value is nested more than " +
                      std::to_string(e.depth()) + " levels deep");
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + text + ": the value is not valid YAML: " + e.msg);
  }
  if (value.IsNull()) throw ConfigError("--set " + text + ": the value is null");
  check_document(value, "--set " + text);
  assign(root, text.substr(0, eq), value, "--set " + text, source);
}

Options make(YAML::Node root, std::shared_ptr<Source> source) {
  auto impl = std::make_shared<Options::Impl>();
  impl->node = root;
  impl->source = std::move(source);
  impl->mark = root.Mark();
  return Options(impl);
}

Options load(const std::string& text, const std::string& name,
             const std::vector<std::string>& overrides, const std::string& folder = "") {
  YAML::Node root;
  try {
    root = parse_document(text, name);
  } catch (const YAML::BadFile&) {
    throw ConfigError(name + ": cannot read the file");
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's message for it is "bad file"
    throw ConfigError(format_mark(name, e.mark) + ": YAML nested more than " +
                      std::to_string(e.depth()) + " levels deep (a study file needs a few)");
  } catch (const YAML::ParserException& e) {
    throw ConfigError(format_mark(name, e.mark) + ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError(name + ": cannot read the document: " + e.msg);
  } catch (const std::ios_base::failure& e) {
    throw ConfigError(name + ": cannot read the file: " + e.what());
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw ConfigError(format_mark(name, root.Mark()) +
                      ": expected a mapping of keys at the top level");
  check_document(root, name);
  auto source = std::make_shared<Source>();
  source->name = name;
  source->folder = folder;
  source->arena.push_back(root);  // once: the arena takes in the document's memory
  for (const auto& text : overrides) apply_override(root, text, *source);
  return make(root, source);
}

}  // namespace

Options load_file(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(path + ": a folder, not a study file");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxDocumentBytes)
    throw ConfigError(path + ": " + std::to_string(size) + " bytes; a study file holds at most " +
                      std::to_string(kMaxDocumentBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.is_open()) throw ConfigError(path + ": cannot read the file");
  refuse_invalid_utf8(text.str(), path);
  std::error_code absolute_error;
  const auto absolute = std::filesystem::absolute(path, absolute_error);
  return load(text.str(), path, overrides,
              absolute_error ? "" : absolute.parent_path().lexically_normal().string());
}

Options load_string(const std::string& text, const std::string& name,
                    const std::vector<std::string>& overrides) {
  if (text.size() > kMaxDocumentBytes)
    throw ConfigError(name + ": " + std::to_string(text.size()) +
                      " bytes; a study file holds at most " + std::to_string(kMaxDocumentBytes) +
                      " bytes");
  refuse_invalid_utf8(text, name);
  return load(text, name, overrides);
}

Options derive(const Options& base, const std::vector<Assignment>& assignments,
               const std::vector<std::string>& without) {
  auto source = std::make_shared<Source>(*base.impl()->source);
  YAML::Node root = fresh_map(*source);
  for (const auto& entry : base.impl()->node)
    if (std::find(without.begin(), without.end(), entry.first.Scalar()) == without.end())
      root[entry.first] = entry.second;
  for (const auto& a : assignments) assign(root, a.path, a.value, a.description, *source);
  return make(root, source);
}

std::string exact(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

namespace {
// Every mapping and list in flow style, whatever style it was written in.
void emit_flow(YAML::Emitter& out, const YAML::Node& node) {
  if (node.IsMap()) {
    out << YAML::Flow << YAML::BeginMap;
    for (const auto& entry : node) {
      out << YAML::Key;
      emit_flow(out, entry.first);
      out << YAML::Value;
      emit_flow(out, entry.second);
    }
    out << YAML::EndMap;
  } else if (node.IsSequence()) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& element : node) emit_flow(out, element);
    out << YAML::EndSeq;
  } else {
    out << node;
  }
}
}  // namespace

std::string flow(const YAML::Node& node) {
  YAML::Emitter out;
  emit_flow(out, node);
  return out.c_str();
}

std::string location(const std::string& file, const YAML::Node& node) {
  return format_mark(file, node.Mark());
}

Options from_node(const YAML::Node& node, const std::string& name) {
  auto source = std::make_shared<Source>();
  source->name = name;
  if (node && !node.IsNull() && !node.IsMap())
    throw ConfigError(name + ": expected a mapping of keys");
  return make(node ? node : YAML::Node(YAML::NodeType::Null), source);
}

YAML::Node raw(const Options& options) { return options.impl()->node; }

std::string override_for(const Options& options, const std::string& full_path) {
  return options.impl()->override_for(full_path);
}

YAML::Node resolved(const Options& options) {
  const auto& impl = *options.impl();
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& key : impl.read_order) {
    auto child = impl.children.find(key);
    if (child != impl.children.end()) {
      out[key] = resolved(Options(child->second));
    } else {
      auto value = impl.values.find(key);
      if (value != impl.values.end()) out[key] = value->second;
    }
  }
  return out;
}

}  // namespace yaml
}  // namespace induct
