#include "study/prepare.hpp"

#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "exec/runner.hpp"
#include "induct/version.hpp"
#include "options_yaml.hpp"
#include "study/kind.hpp"
#include "train/cell_setup.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

namespace induct {

namespace {
using yaml::flow;
}  // namespace

std::string PreparedCell::key() const {
  return content_key(flow(cell.to_yaml()) + " " + plugin_versions);
}

PreparedCell prepare_cell(const CellSpec& spec, const PluginRegistry& registry, int max_actions) {
  PreparedCell prepared;
  auto task = make_task_checked(registry, spec.task);
  if (!registry.find("format", spec.format_name)) {  // located at the name, not a plugin error
    const std::string message = registry.unknown("format", spec.format_name);
    const Options data = spec.root.section("data");
    if (yaml::raw(data)["format"].IsMap()) spec.format.fail("name", message);
    data.fail("format", message);
  }
  auto format = make_format_checked(registry, spec.format);
  CellData data = make_cell_data(task, spec.task_name, format, spec.distribution, spec.L,
                                 spec.validation, spec.n_cap);
  {
    // Once per (plugin, resolved options, task, longest length).
    static std::set<std::string> checked;
    const ComponentInfo* info = registry.find("format", spec.format_name);
    const int longest = max_actions > 0 ? max_actions : spec.L;
    const std::string who = "format '" + spec.format_name + "' (" + info->library + ")";
    const std::string key = who + flow(yaml::resolved(spec.format)) + " " +
                            flow(yaml::resolved(spec.task)) + " " + std::to_string(longest);
    if (!checked.count(key)) {
      check_format(data, longest, who);
      checked.insert(key);
    }
  }
  prepared.num_actions = data.vocab.actions;
  prepared.num_states = data.vocab.states;
  prepared.vocab_size = data.vocab.size();
  prepared.action_positions = data.format->action_position(1, 0) >= 0;
  prepared.max_length = data.format->sequence_length(max_actions > 0 ? max_actions : spec.L);
  // Built on the CPU only to resolve its options and check its output shape.
  auto model = make_model_checked(registry, spec.model,
                                  {prepared.vocab_size, prepared.max_length, data.vocab.pad()}, 0,
                                  torch::kCPU);
  for (const auto& p : model->parameters()) prepared.parameters += p.numel();
  {
    // Once per (plugin, resolved options, shape): a study's cells share a few models.
    static std::set<std::string> causal;
    const std::string who = model_who(registry, spec.model_name);
    const std::string key =
        who + flow(yaml::resolved(spec.model)) + " " + std::to_string(prepared.vocab_size) + " " +
        std::to_string(std::min<int64_t>(prepared.max_length, kCausalCheckLength));
    if (!causal.count(key)) {
      check_causal(*model, {prepared.vocab_size, prepared.max_length, data.vocab.pad()},
                   torch::kCPU, who);
      causal.insert(key);
    }
  }
  spec.root.section("data").reject_unknown_keys("induct");
  prepared.plan = plan_data(data.data);
  prepared.n = spec.n;

  Cell& cell = prepared.cell;
  cell.task = yaml::resolved(spec.task);
  cell.model = yaml::resolved(spec.model);
  cell.format = yaml::resolved(spec.format);
  if (cell.format.size() == 1) cell.format = YAML::Node(spec.format_name);  // its name alone
  cell.distribution = spec.distribution;
  cell.L = spec.L;
  cell.validation = spec.validation;
  cell.n_cap = spec.n_cap;
  const ComponentInfo* task_info = registry.find("task", spec.task_name);
  const ComponentInfo* model_info = registry.find("model", spec.model_name);
  const ComponentInfo* format_info = registry.find("format", spec.format_name);
  // Part of every trial's key: a new version of the data sets, of a plugin or of the SDK's
  // numerics (the shared blocks the models use) is a new trial, never a silent reuse of results
  // it might not reproduce.
  prepared.plugin_versions = "data=" + std::to_string(kDataVersion) +
                             " sdk=" INDUCT_SDK_NUMERICS_VERSION " task:" + spec.task_name + "=" +
                             task_info->plugin_version + " model:" + spec.model_name + "=" +
                             model_info->plugin_version;
  // A format plugin at 1.0.0 adds nothing: the keys made before formats were plugins (the
  // in-tree formats, 1.0.0) stay the keys of the same trials (docs/store.md, "Trial keys").
  if (format_info->plugin_version != "1.0.0")
    prepared.plugin_versions += " format:" + spec.format_name + "=" + format_info->plugin_version;
  prepared.label = cell_label(cell);
  return prepared;
}

void LengthMultiples::read(const Options& root) {
  const Options options = root.section(section);
  multiples = options.get_list<double>(key, multiples);
  if (multiples.empty()) options.fail(key, "must not be empty");
  for (double m : multiples)
    if (!(m >= 1)) options.fail(key, "every multiple of L must be at least 1");
}

std::vector<int> LengthMultiples::lengths(int L) const {
  std::set<int> out;
  for (double m : multiples) out.insert(static_cast<int>(std::lround(m * L)));
  return {out.begin(), out.end()};
}

void LengthMultiples::check(const Options& root, int L) const {
  const double longest = *std::max_element(multiples.begin(), multiples.end()) * L;
  if (longest > kMaxLength)
    root.section(section).fail(
        key, "reads sequences of length " + std::to_string(std::lround(longest)) +
                 " at L = " + std::to_string(L) + "; at most " + std::to_string(kMaxLength));
}

PreparedCell LengthMultiples::prepare(const CellSpec& spec, const PluginRegistry& registry) const {
  return prepare_cell(spec, registry, std::max(spec.L, lengths(spec.L).back()));
}

std::string multiple_label(int length, int L) {
  std::string label = "x";  // (not "x" + string: GCC 12's -Wrestrict misfires on it in C++20)
  label += format_number(static_cast<double>(length) / L, 3);
  return label;
}

std::vector<PreparedCell> prepare_study(const StudyConfig& study, const PluginRegistry& registry) {
  if (study.run.device != "cpu") {
    const Options run = study.root.section("run");
    if (!torch::cuda::is_available())
      run.fail("device", "'" + study.run.device +
                             "' asked for, but this LibTorch has no CUDA support or sees no GPU "
                             "(build induct against a CUDA LibTorch with -DTorch_DIR=...)");
    if (study.run.device.rfind("cuda:", 0) == 0) {  // the index is digits (study_config.cpp)
      if (std::stoi(study.run.device.substr(5)) >= visible_gpus())
        run.fail("device", "'" + study.run.device + "': this process sees " +
                               std::to_string(visible_gpus()) + " GPU(s), cuda:0.." +
                               std::to_string(visible_gpus() - 1));
    }
  }
  std::vector<PreparedCell> cells;
  for (const CellSpec& spec : study.cells)
    for (PreparedCell& cell : study.study->expand(spec, registry)) cells.push_back(std::move(cell));
  return cells;
}

uint64_t training_size(const StudyConfig& study, const PreparedCell& cell) {
  const uint64_t n = cell.n == 0 ? cell.plan.n_max : cell.n;
  if (n > cell.plan.n_max || n == 0)
    throw ConfigError(study.file + ": cell " + cell.label + ": N = " + std::to_string(n) +
                      " but N_max = " + std::to_string(cell.plan.n_max) +
                      " (available sequences minus the validation set)");
  return n;
}

std::string cell_context(const StudyConfig& study, size_t index, size_t count,
                         const std::string& label) {
  return "[" + study.name + "] cell " + std::to_string(index + 1) + "/" + std::to_string(count) +
         " " + label;
}

std::string describe_cell(const PreparedCell& p) {
  std::ostringstream out;
  out << p.label << ": " << p.num_actions << " actions, " << p.num_states << " states, vocabulary "
      << p.vocab_size << ", up to " << p.max_length << " tokens, " << p.parameters
      << " parameters; "
      << (p.plan.available == kUnbounded ? std::string(">= 2^64")
                                         : std::to_string(p.plan.available))
      << " sequences, validation " << p.plan.validation_size << ", N_max " << p.plan.n_max;
  if (p.n > 0) out << "; trains at N = " << p.n;  // kinds that read N: cells may differ in N alone
  return out.str();
}

}  // namespace induct
