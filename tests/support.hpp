// Helpers shared by the test binaries.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "induct/format.hpp"
#include "induct/task.hpp"
#include "options_yaml.hpp"
#include "plugin/registry.hpp"

namespace induct::test {

// Z_m without a plugin, for tests of the core's data code.
class ZmTask final : public Task {
 public:
  explicit ZmTask(int64_t m) : m_(m) {}
  int64_t num_actions() const override { return m_; }
  int64_t num_states() const override { return m_; }
  int64_t initial_state() const override { return 0; }
  int64_t step(int64_t s, int64_t a) const override { return (s + a) % m_; }

 private:
  int64_t m_;
};

// The folders of INDUCT_TEST_PLUGIN_PATH (':'-separated; none when unset): a plugin author's
// libraries, loaded beside the build's (test_models runs its generic checks on their models).
inline std::vector<std::string> extra_plugin_dirs() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("INDUCT_TEST_PLUGIN_PATH")) {
    std::stringstream folders(path);
    for (std::string dir; std::getline(folders, dir, ':');)
      if (!dir.empty()) dirs.push_back(dir);
  }
  return dirs;
}

// The build's real plugins and those of INDUCT_TEST_PLUGIN_PATH, loaded once per test binary.
inline PluginRegistry& plugins() {
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();
    std::vector<std::string> dirs{INDUCT_PLUGIN_DIR};
    for (const auto& dir : extra_plugin_dirs()) dirs.push_back(dir);
    r->load_all(dirs);
    return r;
  }();
  return *registry;
}

// The models the tests make from the registry: every model the build's plugins and those of
// INDUCT_TEST_PLUGIN_PATH register (with `only_extra`: those of INDUCT_TEST_PLUGIN_PATH only),
// less those that need a file to be made (torchscript: its own tests give it one).
inline std::vector<std::string> registered_models(bool only_extra = false) {
  PluginRegistry extra;
  if (only_extra) extra.load_all(extra_plugin_dirs());
  std::vector<std::string> out;
  for (const ComponentInfo& c : (only_extra ? extra : plugins()).components())
    if (c.kind == "model" && c.name != "torchscript") out.push_back(c.name);
  return out;
}

// Whether one of `configs` (model sections as YAML text) is of the model `name`.
inline bool configures(const std::vector<std::string>& configs, const std::string& name) {
  return std::any_of(configs.begin(), configs.end(), [&](const std::string& text) {
    return YAML::Load(text)["name"].as<std::string>() == name;
  });
}

// A format of the build's plugins from its section's text ("name: outcome"), its keys checked.
inline std::shared_ptr<Format> format(const std::string& section) {
  const Options options = yaml::load_string(section, "format.yaml");
  auto made = plugins().make_format(options.require<std::string>("name"), FormatContext{options});
  options.reject_unknown_keys("format");
  return made;
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command, capturing stdout and stderr together.
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  size_t got;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), got);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

// A Boost.Test precondition: gnuplot is installed (tests of figures are skipped, not passed,
// without it).
inline boost::test_tools::assertion_result has_gnuplot(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result found(run_command("command -v gnuplot").exit_code == 0);
  found.message() << "gnuplot is not installed";
  return found;
}

// A file's contents ("" when it cannot be read).
// What `body` writes to stderr: std::cerr and file descriptor 2 (say_line writes there).
template <typename Body>
std::string stderr_of(Body&& body) {
  std::cerr.flush();
  char name[] = "/tmp/induct-test-stderr-XXXXXX";
  const int fd = ::mkstemp(name);
  const int saved = ::dup(2);
  ::dup2(fd, 2);
  ::close(fd);
  struct Restore {
    int saved;
    ~Restore() {
      std::cerr.flush();
      ::dup2(saved, 2);
      ::close(saved);
    }
  };
  {
    Restore restore{saved};
    body();
  }
  std::ifstream in(name, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  ::unlink(name);
  return text.str();
}

inline std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string temp_dir(const std::string& name) {
  std::string dir = "/tmp/induct-test-" + name + "-" + std::to_string(::getpid());
  run_command("rm -rf '" + dir + "' && mkdir -p '" + dir + "'");
  return dir;
}

// The fixtures a Python script under the source tree (e.g. "tests/fixtures/pretrained/
// make_checkpoints.py") writes with Debian's python3-torch into a fresh temporary folder, which
// is returned. Without /usr/bin/python3 and its torch the test binary exits 77 (ctest: skipped,
// never passed); a script that fails exits 1 with its output.
inline std::string python_fixtures(const std::string& script, const std::string& name) {
  const std::string python = "/usr/bin/python3";
  if (run_command(python + " -c 'import torch'").exit_code != 0) {
    std::cout << "SKIPPED: " << python << " cannot import torch (install python3-torch)\n";
    std::exit(77);
  }
  const std::string dir = temp_dir(name);
  const auto made = run_command(python + " " + INDUCT_SOURCE_DIR + "/" + script + " " + dir);
  if (made.exit_code != 0) {
    std::cerr << script << " failed:\n" << made.output;
    std::exit(1);
  }
  return dir;
}

// The names a message lists after `prefix` up to the next ')', split at ", " ({} without the
// prefix): so that tests of "available models: ..." name the plugins they need, not all.
inline std::vector<std::string> listed_after(const std::string& message,
                                             const std::string& prefix) {
  const size_t at = message.find(prefix);
  if (at == std::string::npos) return {};
  const size_t from = at + prefix.size(), to = message.find(')', from);
  std::vector<std::string> names;
  std::stringstream list(message.substr(from, to == std::string::npos ? to : to - from));
  for (std::string name; std::getline(list, name, ',');)
    names.push_back(name.substr(name.find_first_not_of(' ')));
  return names;
}

// The in-tree models (each listed where a message names the available models, in order).
inline const std::vector<std::string> kInTreeModels = {
    "deltanet", "dense_ssm", "gpt2",   "gru",    "hybrid",      "llama", "looped",
    "lstm",     "mamba",     "mamba2", "pythia", "torchscript", "xlstm"};

// Whether `names` is sorted and holds every in-tree model.
inline bool lists_the_in_tree_models(const std::vector<std::string>& names) {
  if (!std::is_sorted(names.begin(), names.end())) return false;
  for (const auto& model : kInTreeModels)
    if (std::find(names.begin(), names.end(), model) == names.end()) return false;
  return true;
}

}  // namespace induct::test
