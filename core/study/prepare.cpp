#include <sstream>

#include "options_yaml.hpp"
#include "study/study.hpp"
#include "train/components.hpp"

namespace induct {

PreparedCell prepare_cell(const StudyConfig& study, const PluginRegistry& registry) {
  const CellSpec& spec = study.cell;
  PreparedCell prepared;
  auto task = make_task_checked(registry, spec.task);
  CellData data = make_cell_data(task, spec.task_name, spec.format, spec.distribution, spec.L,
                                 spec.validation, spec.n_cap);
  prepared.num_actions = data.vocab.actions;
  prepared.num_states = data.vocab.states;
  prepared.vocab_size = data.vocab.size();
  prepared.max_length = data.format->sequence_length(spec.L);
  // Built on the CPU only to resolve its options and check its output shape.
  auto model = make_model_checked(registry, spec.model,
                                  {prepared.vocab_size, prepared.max_length, data.vocab.pad()},
                                  0, torch::kCPU);
  for (const auto& p : model->parameters()) prepared.parameters += p.numel();
  study.root.reject_unknown_keys("induct");
  prepared.plan = plan_data(data.data);

  Cell& cell = prepared.cell;
  cell.task = yaml::resolved(spec.task);
  cell.model = yaml::resolved(spec.model);
  cell.format = spec.format;
  cell.distribution = spec.distribution;
  cell.L = spec.L;
  cell.validation = spec.validation;
  cell.n_cap = spec.n_cap;
  const ComponentInfo* task_info = registry.find("task", spec.task_name);
  const ComponentInfo* model_info = registry.find("model", spec.model_name);
  prepared.plugin_versions = "task:" + spec.task_name + "=" + task_info->plugin_version +
                             " model:" + spec.model_name + "=" + model_info->plugin_version;
  return prepared;
}

TrialSpec make_trial(const StudyConfig& study, const PreparedCell& cell, uint64_t n, double lr,
                     uint64_t seed) {
  TrialSpec trial;
  trial.cell = cell.cell;
  trial.n = n;
  trial.lr = lr;
  trial.seed = seed;
  trial.training = study.training;
  trial.max_length = cell.max_length;
  trial.device = study.run.device;
  trial.plugin_path = plugin_search_path(study.run.plugin_path);
  trial.plugin_versions = cell.plugin_versions;
  return trial;
}

std::string describe_cell(const StudyConfig& study, const PreparedCell& p) {
  auto dump = [](const YAML::Node& node) {
    YAML::Emitter out;
    out << YAML::Flow << node;
    return std::string(out.c_str());
  };
  std::ostringstream out;
  out << "cell: task " << dump(p.cell.task) << ", model " << dump(p.cell.model) << "\n"
      << "      format " << p.cell.format << ", distribution " << p.cell.distribution
      << ", L = " << p.cell.L << "\n"
      << "      " << p.num_actions << " actions, " << p.num_states << " states, vocabulary "
      << p.vocab_size << ", sequences up to " << p.max_length << " tokens, " << p.parameters
      << " model parameters\n"
      << "data: " << (p.plan.available == kUnbounded ? std::string(">= 2^64")
                                                     : std::to_string(p.plan.available))
      << " distinct sequences, validation " << p.plan.validation_size << ", N_max "
      << p.plan.n_max << "\n";
  return out.str();
}

}  // namespace induct
