// The one registry of models, tasks and formats, filled by loading plugin libraries (Boost.DLL).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "induct/plugin.hpp"

namespace boost::dll {
class shared_library;
}

namespace induct {

// A library the loader refused, or a component that could not be made. what() names the
// file (and the plugin) and says what is wrong.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ComponentInfo {
  std::string kind;  // "model", "task" or "format"
  std::string name;
  std::string description;
  std::string library;  // the file it came from
  std::string plugin_name;
  std::string plugin_version;
};

struct LoadProblem {
  std::string file;
  std::string message;
  bool named = false;  // the path named this file itself (not a folder holding it)
};

class PluginRegistry final : public Registrar {
 public:
  PluginRegistry();
  ~PluginRegistry() override;
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Loads one library and registers its components; throws PluginError naming the file when
  // it is refused (missing, not loadable, no entry point, other API version, struct size,
  // libtorch version or C++ ABI, a registration that throws or repeats a name). A refused
  // library registers nothing. Loading the same file twice is a no-op.
  void load(const std::filesystem::path& file);
  // Loads each path: a file, or every *.so in a folder. Refusals are collected in problems()
  // instead of thrown, so one broken library does not hide the good ones.
  void load_all(const std::vector<std::string>& paths);
  const std::vector<LoadProblem>& problems() const { return problems_; }

  std::vector<ComponentInfo> components() const;  // models, then tasks, then formats, by name
  const ComponentInfo* find(const std::string& kind, const std::string& name) const;
  // The names of one kind, for "unknown model 'x' (available: ...)" messages.
  std::string available(const std::string& kind) const;
  // "unknown format 'x' (available formats: ...)", with the refused libraries if any.
  std::string unknown(const std::string& kind, const std::string& name) const;

  // Build a component. Unknown names throw PluginError listing the available ones; errors
  // thrown by the plugin are rethrown with the plugin's name (ConfigErrors stay ConfigErrors).
  // The objects keep their library loaded for as long as they live.
  std::shared_ptr<SequenceModel> make_model(const std::string& name, const ModelContext& ctx) const;
  std::shared_ptr<Task> make_task(const std::string& name, const TaskContext& ctx) const;
  std::shared_ptr<Format> make_format(const std::string& name, const FormatContext& ctx) const;

  // Registrar, called by plugins during load().
  void add_model(const std::string& name, const std::string& description,
                 ModelFactory factory) override;
  void add_task(const std::string& name, const std::string& description,
                TaskFactory factory) override;
  void add_format(const std::string& name, const std::string& description,
                  FormatFactory factory) override;

 private:
  struct Entry {
    ComponentInfo info;
    ModelFactory model;
    TaskFactory task;
    FormatFactory format;
    std::shared_ptr<boost::dll::shared_library> library;
  };
  void add(Entry entry);
  void stage(Entry entry, bool has_factory);

  std::vector<std::shared_ptr<boost::dll::shared_library>> libraries_;  // never unloaded
  std::vector<std::string> loaded_files_;
  std::map<std::string, Entry> models_, tasks_, formats_;
  // The entry of a name; PluginError listing the available ones when there is none.
  const Entry& entry(const std::string& kind, const std::string& name) const;
  std::map<std::string, Entry>& table(const std::string& kind);
  const std::map<std::string, Entry>& table(const std::string& kind) const;
  std::vector<LoadProblem> problems_;
  // During a load(): the library being registered and what it registered so far.
  struct Loading {
    std::string file, plugin_name, plugin_version;
    std::shared_ptr<boost::dll::shared_library> library;
    std::vector<Entry> entries;
    std::string error;
  };
  Loading* loading_ = nullptr;
};

// The folders searched for plugins, in order: the given paths (--plugin-path), then
// $INDUCT_PLUGIN_PATH (colon-separated), then the plugin folder next to the executable
// (<prefix>/lib/induct/plugins).
std::vector<std::string> plugin_search_path(const std::vector<std::string>& given);

}  // namespace induct
