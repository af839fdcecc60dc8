#include "study/step_rate.hpp"

#include <algorithm>
#include <cmath>

#include "options_yaml.hpp"
#include "study/step.hpp"
#include "train/cell_setup.hpp"
#include "train/run_trial.hpp"

namespace induct {

namespace {
uint64_t timing_size(const PreparedCell& cell) {
  return std::max<uint64_t>(std::min<uint64_t>(cell.n > 0 ? cell.n : cell.plan.n_max, 640), 1);
}
}  // namespace

std::string step_shape(const StudyConfig& study, const PreparedCell& cell,
                       const PluginRegistry& registry) {
  // The length profile: the mean and the longest length of the training set it is timed on
  // (measure_step_rate's first seed), the mean within 10%. Short-to-Long fills N with the
  // shortest sequences: the same few lengths whatever L when the task has many actions.
  const uint64_t n = timing_size(cell);
  const CellData data = make_cell_data(registry, cell.cell);
  const Split split = make_split(data.data, n, study.seeds.front());
  double mean = 0;
  int longest = 0;
  for (size_t i = 0; i < split.train.size(); ++i) {
    mean += split.train.length(i);
    longest = std::max(longest, split.train.length(i));
  }
  mean /= static_cast<double>(std::max<size_t>(split.train.size(), 1));
  const long bucket = std::lround(std::log(std::max(mean, 1.0)) / std::log(1.1));
  return yaml::flow(cell.cell.model) + " " + cell.cell.format_label() + " " +
         cell.cell.distribution + " N=" + std::to_string(n) + " lengths " + std::to_string(bucket) +
         "/" + std::to_string(longest);
}

StepRate measure_step_rate(const StudyConfig& study, const PreparedCell& cell,
                           const PluginRegistry& registry) {
  const uint64_t n = timing_size(cell);
  TrialSpec trial = make_trial(study, cell, n, study.learning_rates.front(), study.seeds.front());
  trial.training.stall_window = 0;
  trial.training.epsilon = 0;  // never stops as a success
  auto run = [&](int64_t steps) {
    trial.training.max_steps = steps;
    trial.training.eval_every = steps;
    return run_trial(trial, registry);
  };
  const TrialResult first = run(5);
  const double per_step = first.seconds / static_cast<double>(std::max<int64_t>(first.steps, 1));
  // The second run about 1.2 seconds longer.
  const auto more = static_cast<int64_t>(std::clamp(1.2 / std::max(per_step, 1e-6), 10.0, 400.0));
  const TrialResult second = run(5 + more);
  const double seconds = second.seconds - first.seconds;
  if (second.steps <= first.steps || !(seconds > 0)) return {n, std::nan("")};
  return {n, static_cast<double>(second.steps - first.steps) / seconds};
}

}  // namespace induct
