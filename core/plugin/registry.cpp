#include "plugin/registry.hpp"

#include <elf.h>
#include <torch/version.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "induct/format.hpp"
#include "induct/model.hpp"
#include "induct/task.hpp"

namespace induct {

namespace fs = std::filesystem;

namespace {

// Why the dynamic loader must not see this file, or "" if it may. dlopen maps the file's
// loadable segments; touching a page past the end of a truncated file raises SIGBUS in the
// host, so every segment, and every table the loader reads, must lie inside the file.
std::string elf_problem(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "cannot read the file";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  auto read = [&](uint64_t offset, void* to, size_t bytes) {
    if (offset > size || bytes > size - offset) return false;
    in.seekg(static_cast<std::streamoff>(offset));
    return static_cast<bool>(in.read(static_cast<char*>(to), static_cast<std::streamsize>(bytes)));
  };
  Elf64_Ehdr header{};
  unsigned char ident[EI_NIDENT] = {};
  if (!read(0, ident, sizeof ident) || std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return "not a shared library (no ELF header)";
  if (ident[EI_CLASS] != ELFCLASS64) return "not a 64-bit ELF library";
  const unsigned char host_data =
      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (ident[EI_DATA] != host_data) return "an ELF library of the other byte order";
  if (!read(0, &header, sizeof header))
    return "truncated: " + std::to_string(size) + " bytes, shorter than its ELF header";
  if (header.e_type != ET_DYN) return "an ELF file that is not a shared library";
#if defined(__x86_64__)
  if (header.e_machine != EM_X86_64) return "a library for another processor";
#elif defined(__aarch64__)
  if (header.e_machine != EM_AARCH64) return "a library for another processor";
#endif
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0)
    return "an ELF library without program headers";
  const std::string truncated = "truncated or damaged (" + std::to_string(size) + " bytes; ";
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    if (!read(header.e_phoff + uint64_t{i} * sizeof segment, &segment, sizeof segment))
      return truncated + "its program headers end past the end of the file)";
    const bool loaded = segment.p_type == PT_LOAD || segment.p_type == PT_DYNAMIC;
    if (loaded && (segment.p_offset > size || segment.p_filesz > size - segment.p_offset))
      return truncated + "segment " + std::to_string(i) + " needs " +
             std::to_string(segment.p_offset + segment.p_filesz) + ")";
  }
  if (header.e_shnum != 0 &&
      (header.e_shoff > size ||
       uint64_t{header.e_shnum} * header.e_shentsize > size - header.e_shoff))
    return truncated + "its section headers end past the end of the file)";
  return "";
}

}  // namespace

PluginRegistry::PluginRegistry() = default;
PluginRegistry::~PluginRegistry() {
  // Libraries stay mapped for the life of the process (docs/design.md, "The plugin boundary":
  // unmapping a plugin whose objects are still referenced crashes later, far from the cause).
  for (auto& library : libraries_) new std::shared_ptr<boost::dll::shared_library>(library);
}

void PluginRegistry::load(const fs::path& given) {
  std::error_code ec;
  fs::path file = fs::weakly_canonical(given, ec);
  if (ec) file = given;
  const std::string name = given.string();
  if (std::find(loaded_files_.begin(), loaded_files_.end(), file.string()) != loaded_files_.end())
    return;
  // Error codes, not exceptions: a symlink loop or an unreadable entry is this file's problem
  // (a refused library), never the end of every command.
  const fs::file_status status = fs::status(file, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw PluginError(name + ": cannot read it: " + ec.message());
  if (!fs::exists(status)) throw PluginError(name + ": no such plugin file");
  if (!fs::is_regular_file(status)) throw PluginError(name + ": not a file");
  if (std::string problem = elf_problem(file); !problem.empty())
    throw PluginError(name + ": cannot load the library: " + problem);

  auto library = std::make_shared<boost::dll::shared_library>();
  try {
    // rtld_now: a plugin with an unresolved symbol fails here, not in the middle of a run.
    library->load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    throw PluginError(name + ": cannot load the library: " + e.what());
  }
  if (!library->has(INDUCT_PLUGIN_ENTRY_SYMBOL))
    throw PluginError(name + ": not an induct plugin (no '" INDUCT_PLUGIN_ENTRY_SYMBOL
                             "' entry point; define one with INDUCT_PLUGIN)");
  const InductPluginInfo* info =
      library->get<const InductPluginInfo*()>(INDUCT_PLUGIN_ENTRY_SYMBOL)();
  if (!info) throw PluginError(name + ": the entry point returned no plugin info");
  // The first two fields are stable across API versions; check them before anything else.
  if (info->api_version != INDUCT_PLUGIN_API_VERSION)
    throw PluginError(name + ": built for plugin API version " + std::to_string(info->api_version) +
                      ", but this induct uses version " +
                      std::to_string(INDUCT_PLUGIN_API_VERSION) +
                      " (rebuild the plugin against this SDK)");
  if (info->struct_size != sizeof(InductPluginInfo))
    throw PluginError(name + ": plugin info is " + std::to_string(info->struct_size) +
                      " bytes, expected " + std::to_string(sizeof(InductPluginInfo)) +
                      " (built against a different SDK header)");
  if (info->torch_major != TORCH_VERSION_MAJOR || info->torch_minor != TORCH_VERSION_MINOR)
    throw PluginError(name + ": built against libtorch " + std::to_string(info->torch_major) + "." +
                      std::to_string(info->torch_minor) + ", but induct uses libtorch " +
                      std::to_string(TORCH_VERSION_MAJOR) + "." +
                      std::to_string(TORCH_VERSION_MINOR));
  if (info->gxx_abi_version != __GXX_ABI_VERSION || info->cxx11_abi != _GLIBCXX_USE_CXX11_ABI)
    throw PluginError(name + ": built with another C++ ABI (GXX ABI " +
                      std::to_string(info->gxx_abi_version) + ", CXX11 ABI " +
                      std::to_string(info->cxx11_abi) +
                      "; induct: " + std::to_string(__GXX_ABI_VERSION) + ", " +
                      std::to_string(_GLIBCXX_USE_CXX11_ABI) + ")");
  if (!info->register_components || !info->plugin_name)
    throw PluginError(name + ": plugin info has no name or no register function");

  Loading loading{
      name, info->plugin_name, info->plugin_version ? info->plugin_version : "", library, {}, {}};
  loading_ = &loading;
  try {
    info->register_components(*this);
  } catch (const std::exception& e) {
    loading.error = "registration threw: " + std::string(e.what());
  } catch (...) {
    loading.error = "registration threw a non-standard exception";
  }
  loading_ = nullptr;
  if (!loading.error.empty())
    throw PluginError(name + " (plugin '" + loading.plugin_name + "'): " + loading.error);
  if (loading.entries.empty())
    throw PluginError(name + " (plugin '" + loading.plugin_name + "'): registered no component");
  for (auto& entry : loading.entries) add(std::move(entry));
  libraries_.push_back(library);
  loaded_files_.push_back(file.string());
}

void PluginRegistry::load_all(const std::vector<std::string>& paths) {
  for (const auto& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(path, ec))
        if (entry.path().extension() == ".so") files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        try {
          load(file);
        } catch (const PluginError& e) {
          problems_.push_back({file.string(), e.what()});
        }
      }
    } else {
      try {
        load(path);
      } catch (const PluginError& e) {
        problems_.push_back({path, e.what(), true});
      }
    }
  }
}

std::map<std::string, PluginRegistry::Entry>& PluginRegistry::table(const std::string& kind) {
  return kind == "model" ? models_ : kind == "task" ? tasks_ : formats_;
}

const std::map<std::string, PluginRegistry::Entry>& PluginRegistry::table(
    const std::string& kind) const {
  return kind == "model" ? models_ : kind == "task" ? tasks_ : formats_;
}

void PluginRegistry::add(Entry entry) {
  table(entry.info.kind).emplace(entry.info.name, std::move(entry));
}

namespace {
template <class Map>
const ComponentInfo* lookup(const Map& table, const std::string& name) {
  auto found = table.find(name);
  return found == table.end() ? nullptr : &found->second.info;
}
}  // namespace

void PluginRegistry::add_model(const std::string& name, const std::string& description,
                               ModelFactory factory) {
  Entry entry;
  entry.info = {"model", name, description, {}, {}, {}};
  const bool has_factory = static_cast<bool>(factory);
  entry.model = std::move(factory);
  stage(std::move(entry), has_factory);
}

void PluginRegistry::add_task(const std::string& name, const std::string& description,
                              TaskFactory factory) {
  Entry entry;
  entry.info = {"task", name, description, {}, {}, {}};
  const bool has_factory = static_cast<bool>(factory);
  entry.task = std::move(factory);
  stage(std::move(entry), has_factory);
}

void PluginRegistry::add_format(const std::string& name, const std::string& description,
                                FormatFactory factory) {
  Entry entry;
  entry.info = {"format", name, description, {}, {}, {}};
  const bool has_factory = static_cast<bool>(factory);
  entry.format = std::move(factory);
  stage(std::move(entry), has_factory);
}

void PluginRegistry::stage(Entry entry, bool has_factory) {
  const std::string& kind = entry.info.kind;
  const std::string& name = entry.info.name;
  if (!loading_) throw PluginError(kind + " '" + name + "' registered outside a plugin load");
  if (name.empty()) loading_->error = "registers a " + kind + " with an empty name";
  if (!has_factory) loading_->error = kind + " '" + name + "' has no factory";
  for (const auto& pending : loading_->entries)
    if (pending.info.kind == kind && pending.info.name == name)
      loading_->error = "registers " + kind + " '" + name + "' twice";
  if (const ComponentInfo* existing = find(kind, name))
    loading_->error = kind + " '" + name + "' is registered by both " + existing->library +
                      " and " + loading_->file + " (keep one of them on the plugin path)";
  entry.info.library = loading_->file;
  entry.info.plugin_name = loading_->plugin_name;
  entry.info.plugin_version = loading_->plugin_version;
  entry.library = loading_->library;
  loading_->entries.push_back(std::move(entry));
}

std::vector<ComponentInfo> PluginRegistry::components() const {
  std::vector<ComponentInfo> out;
  for (const auto& [name, entry] : models_) out.push_back(entry.info);
  for (const auto& [name, entry] : tasks_) out.push_back(entry.info);
  for (const auto& [name, entry] : formats_) out.push_back(entry.info);
  return out;
}

const ComponentInfo* PluginRegistry::find(const std::string& kind, const std::string& name) const {
  return lookup(table(kind), name);
}

std::string PluginRegistry::available(const std::string& kind) const {
  std::string names;
  for (const auto& [name, entry] : table(kind)) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

namespace {

std::string unknown_message(const std::string& kind, const std::string& name,
                            const std::string& available,
                            const std::vector<LoadProblem>& problems) {
  std::string message =
      "unknown " + kind + " '" + name + "' (available " + kind + "s: " + available + ")";
  if (!problems.empty()) {
    message += "; " + std::to_string(problems.size()) + " plugin librar" +
               (problems.size() == 1 ? "y was" : "ies were") + " refused:";
    for (const auto& p : problems) message += "\n  " + p.message;
  }
  return message;
}

// Runs a plugin factory: plugin errors carry the plugin's name; ConfigErrors (bad options)
// already name the file and key and pass through unchanged.
template <class Make>
auto call_plugin(const ComponentInfo& info, Make make) {
  try {
    auto made = make();
    if (!made)
      throw PluginError(info.kind + " '" + info.name + "' (" + info.library +
                        "): the factory returned nothing");
    return made;
  } catch (const ConfigError&) {
    throw;
  } catch (const PluginError&) {
    throw;
  } catch (const std::exception& e) {
    throw PluginError(info.kind + " '" + info.name + "' (" + info.library + "): " + e.what());
  } catch (...) {
    throw PluginError(info.kind + " '" + info.name + "' (" + info.library +
                      "): threw a non-standard exception");
  }
}

// What a plugin's factory made, owned through a shared_ptr whose control block is host code
// and whose deleter holds the library (docs/design.md).
template <class T, class Make>
std::shared_ptr<T> made_by(const ComponentInfo& info,
                           const std::shared_ptr<boost::dll::shared_library>& library, Make make) {
  std::unique_ptr<T> made = call_plugin(info, make);
  return std::shared_ptr<T>(made.release(), [library](T* object) { delete object; });
}

}  // namespace

std::string PluginRegistry::unknown(const std::string& kind, const std::string& name) const {
  return unknown_message(kind, name, available(kind), problems_);
}

const PluginRegistry::Entry& PluginRegistry::entry(const std::string& kind,
                                                   const std::string& name) const {
  const auto& entries = table(kind);
  auto found = entries.find(name);
  if (found == entries.end()) throw PluginError(unknown(kind, name));
  return found->second;
}

std::shared_ptr<SequenceModel> PluginRegistry::make_model(const std::string& name,
                                                          const ModelContext& ctx) const {
  const Entry& e = entry("model", name);
  return made_by<SequenceModel>(e.info, e.library, [&] { return e.model(ctx); });
}

std::shared_ptr<Task> PluginRegistry::make_task(const std::string& name,
                                                const TaskContext& ctx) const {
  const Entry& e = entry("task", name);
  return made_by<Task>(e.info, e.library, [&] { return e.task(ctx); });
}

std::shared_ptr<Format> PluginRegistry::make_format(const std::string& name,
                                                    const FormatContext& ctx) const {
  const Entry& e = entry("format", name);
  return made_by<Format>(e.info, e.library, [&] { return e.format(ctx); });
}

std::vector<std::string> plugin_search_path(const std::vector<std::string>& given) {
  std::vector<std::string> path = given;
  if (const char* env = std::getenv("INDUCT_PLUGIN_PATH")) {
    std::stringstream stream(env);
    for (std::string item; std::getline(stream, item, ':');)
      if (!item.empty()) path.push_back(item);
  }
  // INDUCT_PLUGIN_DIR_FROM_BIN: the plugin folder relative to the binary's folder, the same
  // in the build tree and the install tree (CMakeLists.txt).
  fs::path exe = boost::dll::program_location();
  path.push_back((exe.parent_path() / INDUCT_PLUGIN_DIR_FROM_BIN).lexically_normal().string());
  return path;
}

}  // namespace induct
