// Typed, checked reading of one section of a study file.
//
// The host hands every plugin the YAML section that configures it (e.g. `model:`) as an
// Options. The plugin reads each key it understands with get/require; after the factory
// returns, the host rejects every key nobody read, with the file, line and column of the
// key and the keys that were read (so a misspelt key never passes silently). The host uses
// the same class for its own sections: there is one options parser in induct.
//
// Options is cheap to copy; copies share state. It does not expose yaml-cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "induct/export.hpp"

namespace induct {

// A study file (or a --set override) that is wrong. what() names the place and the key,
// e.g. "study.yaml:12:5: model.hidden: expected an integer, got 'abc'". The message is one
// line: a line break in it (from a value it quotes) is written as \n.
class INDUCT_SDK_API ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message);
  explicit ConfigError(const char* message);
  ~ConfigError() override;
};

class INDUCT_SDK_API Options {
 public:
  // Empty options: every get() returns its fallback.
  Options();
  ~Options();
  Options(const Options&);
  Options& operator=(const Options&);

  // The value of `key`, or `fallback` when the key is absent. T is one of bool, int,
  // long, long long, unsigned long, double, std::string. Throws ConfigError when the value
  // has another type. Integers may be written 1e6 when the value is integral.
  template <class T>
  T get(const std::string& key, const T& fallback) const;
  // Like get(), for a key that has no default: absent is an error.
  template <class T>
  T require(const std::string& key) const;
  // A list value; a single scalar is read as a list of one.
  template <class T>
  std::vector<T> get_list(const std::string& key, const std::vector<T>& fallback) const;

  // A required table: a list of rows, each a list of values (e.g. a multiplication table
  // `[[0, 1], [1, 0]]`). A missing key, a row that is not a list or an entry of another type
  // is a ConfigError naming the entry ("task.table[2][1]") at its line.
  template <class T>
  std::vector<std::vector<T>> require_table(const std::string& key) const;

  // A required file: its path, resolved against the folder of the study file that wrote it (the
  // working directory for a --set or a document not read from a file), must name a readable
  // file. Returns the absolute path. The resolved options record that path and the file's
  // content digest as `<key>_digest`, so a changed file gives new trial keys (never a reuse of
  // results from the old file); a `<key>_digest` written in the section pins the file, and a
  // file whose digest differs is a ConfigError.
  std::string get_file(const std::string& key) const;
  // The same for a required folder that must hold `files` (e.g. {"config.json",
  // "model.safetensors"}); its digest is over those files.
  std::string get_folder(const std::string& key, const std::vector<std::string>& files) const;

  bool has(const std::string& key) const;
  // The keys present in this section, in file order.
  std::vector<std::string> keys() const;
  // A nested section (an empty one when absent). Reading it marks `key` as known.
  Options section(const std::string& key) const;

  // Marks `key` as known without reading it: someone else reads it (e.g. the host reads a
  // section once per grid point from another document).
  void claim(const std::string& key) const;

  // Throw a ConfigError about `key`, located at the key's value (or at this section when
  // the key is absent), e.g. fail("hidden", "must be at least 1").
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  // "file:line:column" of the key's value, "--set a.b=v" for an override, or the file.
  std::string where(const std::string& key) const;
  // The dotted path of `key` from the document root, e.g. "model.hidden".
  std::string path(const std::string& key) const;

  // Throws ConfigError for the first key of this section (and of the sections read from it)
  // that no get/require/section call asked for. `owner` names who reads this section in the
  // message, e.g. "model 'lstm'".
  void reject_unknown_keys(const std::string& owner) const;

  struct Impl;
  explicit Options(std::shared_ptr<Impl> impl);
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

// An integer option within [minimum, maximum], `fallback` when absent; outside is a
// ConfigError naming the key and its line ("must be at most 65536"). Plugins bound their sizes
// with it so that a typo (hidden: 1e9) is refused before anything is allocated.
inline long get_in_range(const Options& options, const std::string& key, long fallback,
                         long minimum, long maximum) {
  const long value = options.get<long>(key, fallback);
  if (value < minimum) options.fail(key, "must be at least " + std::to_string(minimum));
  if (value > maximum) options.fail(key, "must be at most " + std::to_string(maximum));
  return value;
}

}  // namespace induct
