// The plugin boundary: the entry point every plugin library exports and the registration
// API it calls.
//
// A plugin library exports one C function, induct_plugin_entry, returning a static
// InductPluginInfo. The host reads and checks the info (API version, struct size, libtorch
// version, C++ ABI) before it calls any C++ code of the plugin; then it calls
// register_components, which registers one or more named model, task or format factories.
// Use INDUCT_PLUGIN to define the entry point:
//
//   static void register_components(induct::Registrar& r) {
//     r.add_model("lstm", "one-layer LSTM", [](const induct::ModelContext& ctx) {
//       return std::make_unique<Lstm>(ctx);
//     });
//   }
//   INDUCT_PLUGIN("lstm", "1.0.0", register_components)
//
// Libraries are never unloaded; the host keeps each one mapped for the life of the process.
#pragma once

#include <torch/version.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "induct/export.hpp"
#include "induct/version.hpp"

namespace induct {

class SequenceModel;
class Task;
class Format;
struct ModelContext;
struct TaskContext;
struct FormatContext;

using ModelFactory = std::function<std::unique_ptr<SequenceModel>(const ModelContext&)>;
using TaskFactory = std::function<std::unique_ptr<Task>(const TaskContext&)>;
using FormatFactory = std::function<std::unique_ptr<Format>(const FormatContext&)>;

// Implemented by the host. Names are global across all loaded plugins: registering a name
// another library already registered is an error that names both files.
class INDUCT_SDK_API Registrar {
 public:
  virtual ~Registrar();
  virtual void add_model(const std::string& name, const std::string& description,
                         ModelFactory factory) = 0;
  virtual void add_task(const std::string& name, const std::string& description,
                        TaskFactory factory) = 0;
  // A supervision format (induct/format.hpp), named in a study as `data: {format: NAME}`.
  virtual void add_format(const std::string& name, const std::string& description,
                          FormatFactory factory) = 0;
};

}  // namespace induct

extern "C" {
// The first two fields keep their place in every API version, so the host can always read
// them and refuse a plugin of another version with a precise message.
struct InductPluginInfo {
  uint32_t struct_size;
  uint32_t api_version;
  uint32_t torch_major;
  uint32_t torch_minor;
  uint32_t gxx_abi_version;
  uint32_t cxx11_abi;
  const char* plugin_name;
  const char* plugin_version;
  void (*register_components)(induct::Registrar&);
};
}

#define INDUCT_PLUGIN_ENTRY_SYMBOL "induct_plugin_entry"

#define INDUCT_PLUGIN(NAME, VERSION, REGISTER)                         \
  INDUCT_PLUGIN_EXPORT const InductPluginInfo* induct_plugin_entry() { \
    static const InductPluginInfo info = {sizeof(InductPluginInfo),    \
                                          INDUCT_PLUGIN_API_VERSION,   \
                                          TORCH_VERSION_MAJOR,         \
                                          TORCH_VERSION_MINOR,         \
                                          __GXX_ABI_VERSION,           \
                                          _GLIBCXX_USE_CXX11_ABI,      \
                                          NAME,                        \
                                          VERSION,                     \
                                          &REGISTER};                  \
    return &info;                                                      \
  }
