#include "train/run_trial.hpp"

#include "options_yaml.hpp"
#include "train/cell_setup.hpp"
#include "train/checkpoint.hpp"
#include "train/measurement.hpp"

namespace induct {

TrialResult run_trial(const TrialSpec& spec, const PluginRegistry& registry,
                      TrainObserver* observer, SplitCache* cache,
                      const Measurements* measurements) {
  CellData cell = make_cell_data(registry, spec.cell);
  Split split =
      cache ? cache->get(cell.data, spec.n, spec.seed) : make_split(cell.data, spec.n, spec.seed);
  ExampleSet train(split.train, *cell.transitions, *cell.format, cell.vocab);
  ExampleSet validation(split.validation, *cell.transitions, *cell.format, cell.vocab);
  const torch::Device device(spec.device);
  auto model =
      make_model_checked(registry, yaml::from_node(spec.cell.model, "<trial model>"),
                         {cell.vocab.size(), spec.max_length, cell.vocab.pad()}, spec.seed, device);
  TrainData data{train, validation, cell.vocab.pad(),
                 cell.data.distribution->ascending_batches() && spec.training.curriculum};
  if (spec.training.stall_window > 0)
    data.chance_loss =
        plateau_loss(cell, validation.size() > 0 ? validation : train, spec.training.plateau_level);
  StateFile state;
  if (!spec.state_dir.empty()) {
    state.path = spec.state_path();
    state.trajectory = spec.trajectory_key();
    state.every = spec.state_every;
    state.keep_final = spec.keep_states == "failed";
    state.keep_stopped = spec.keep_states == "failed" || spec.keep_states == "stopped";
  }
  TrialResult result = train_model(*model, data, spec.training, spec.lr, spec.seed, device,
                                   observer, spec.state_dir.empty() ? nullptr : &state);
  if (result.status == TrialStatus::kCancelled) return result;
  const YAML::Node asked = spec.measurements.clone();
  if (asked.size() > 0) {
    model->eval();
    const MeasureContext context{*model, cell, spec, device};
    for (const auto& entry : asked) {
      const std::string name = entry.first.as<std::string>();
      const Measurement measure = measurements ? measurements->find(name) : nullptr;
      if (!measure) throw std::logic_error("trial asks for an unknown measurement '" + name + "'");
      result.measurements.set(name, measure(context, entry.second));
    }
  }
  if (!spec.checkpoint_dir.empty())
    save_checkpoint(*model, checkpoint_path(spec.checkpoint_dir, spec.key()));
  return result;
}

}  // namespace induct
