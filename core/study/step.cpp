#include "study/step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "study/kind.hpp"
#include "train/archive_file.hpp"
#include "train/cell_setup.hpp"
#include "train/checkpoint.hpp"
#include "util/text.hpp"

namespace induct {

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

TrialSpec make_trial(const StudyRun& run, const PreparedCell& cell, uint64_t n, double lr,
                     uint64_t seed) {
  TrialSpec trial = make_trial(run.config, cell, n, lr, seed);
  trial.state_dir = std::filesystem::absolute(run.out_dir / "states").string();
  trial.state_every = run.config.run.state_every;
  trial.keep_states = run.config.run.keep_states;
  return trial;
}

std::string checkpoint_file(const StudyRun& run, const TrialSpec& trial) {
  return checkpoint_path(std::filesystem::absolute(run.out_dir / "checkpoints").string(),
                         trial.key());
}

std::optional<TrialResult> reusable_result(StudyRun& run, const TrialSpec& trial,
                                           StepOptions::Checkpoints checkpoints) {
  auto stored = run.store.find_finished(trial.key());
  if (stored && checkpoints == StepOptions::Checkpoints::kRequire) {
    const std::string file = checkpoint_file(run, trial);
    const std::string problem = archive_file_problem(file);
    if (!problem.empty()) {
      if (problem != "no such file")
        run.progress.log(file + ": not a usable checkpoint (" + problem + "); training it again");
      stored.reset();
    }
  }
  return stored;
}

bool record_result(StudyRun& run, const TrialSpec& trial, const TrialResult& result,
                   const std::string& context) {
  run.store.put(run.config.name, trial, result);
  if (result.status == TrialStatus::kCancelled) trial.discard_state();
  if (result.status == TrialStatus::kError)
    run.progress.log(context + " | " + trial.configuration() + ": error: " + result.error);
  return result.status != TrialStatus::kCancelled || result.steps > 0;
}

StepResult run_step(StudyRun& run, const PreparedCell& cell, uint64_t n, const StepOptions& options,
                    const std::string& context) {
  const bool first_success = options.first_success;
  const StudyConfig& config = run.config;
  StepResult step;
  for (double lr : config.learning_rates)
    for (uint64_t seed : config.seeds) {
      TrialSpec trial = make_trial(run, cell, n, lr, seed);
      trial.measurements = options.measurements;
      if (options.checkpoints != StepOptions::Checkpoints::kNone)
        trial.checkpoint_dir = std::filesystem::absolute(run.out_dir / "checkpoints").string();
      step.trials.push_back(std::move(trial));
    }
  step.results.assign(step.trials.size(), TrialResult::cancelled());

  std::vector<size_t> pending_index;
  std::vector<TrialSpec> pending;
  for (size_t i = 0; i < step.trials.size(); ++i) {
    if (auto stored = reusable_result(run, step.trials[i], options.checkpoints)) {
      step.results[i] = *stored;
      step.success = step.success || stored->succeeded();
    } else {
      pending_index.push_back(i);
      pending.push_back(step.trials[i]);
    }
  }
  // A stored success already decides a first-success step.
  if (pending.empty() || (first_success && step.success)) return step;

  struct Live {
    int64_t step = 0;
    double best = 0;
  };
  std::map<size_t, Live> live;
  size_t done = 0;
  double best = std::numeric_limits<double>::infinity();
  auto show = [&] {
    std::string line =
        context + " | " + std::to_string(done) + "/" + std::to_string(pending.size()) + " trials";
    if (std::isfinite(best)) line += ", best loss " + format_number(best, 3);
    for (const auto& [i, state] : live)
      line += " | " + pending[i].configuration() + " step " + std::to_string(state.step);
    line += " | " + format_duration(run.progress.elapsed());
    run.progress.status(line);
  };

  RunCallbacks callbacks;
  callbacks.on_start = [&](size_t i) {
    live[i] = Live{};
    show();
  };
  callbacks.on_progress = [&](size_t i, const EvalPoint& point, double best_loss) {
    live[i] = Live{point.step, best_loss};
    best = std::min(best, best_loss);
    show();
  };
  callbacks.on_done = [&](size_t i, const TrialResult& result) {
    live.erase(i);
    ++done;
    step.results[pending_index[i]] = result;
    if (record_result(run, pending[i], result, context)) ++step.trained;
    if (std::isfinite(result.best_loss)) best = std::min(best, result.best_loss);
    if (result.status == TrialStatus::kError) ++step.errors;
    step.success = step.success || result.succeeded();
    show();
    return first_success && result.succeeded();
  };
  run.runner.run_list(pending, callbacks);
  return step;
}

std::vector<size_t> ranked_configurations(const StepResult& step,
                                          const std::function<bool(size_t)>& usable) {
  std::vector<size_t> ranked;
  for (size_t i = 0; i < step.results.size(); ++i) {
    const TrialResult& r = step.results[i];
    if (r.status == TrialStatus::kCancelled || r.status == TrialStatus::kError) continue;
    if (usable(i)) ranked.push_back(i);
  }
  const auto final_loss = [](const TrialResult& t) {
    return std::isfinite(t.last.loss) ? t.last.loss : std::numeric_limits<double>::infinity();
  };
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    const TrialResult &x = step.results[a], &y = step.results[b];
    if (x.succeeded() != y.succeeded()) return x.succeeded();
    return final_loss(x) < final_loss(y);
  });
  return ranked;
}

bool Counted::any() const {
  return std::find(counted.begin(), counted.end(), true) != counted.end();
}

Counted counted_configurations(const std::vector<bool>& succeeded,
                               const std::vector<double>& accuracy, double min_accuracy) {
  if (accuracy.size() != succeeded.size())
    throw std::logic_error("counted_configurations: one accuracy per configuration");
  Counted c;
  const size_t all = succeeded.size();
  c.learned = std::find(succeeded.begin(), succeeded.end(), true) != succeeded.end();
  c.counted.assign(all, false);
  c.below.assign(all, false);
  size_t n = 0, below = 0;  // of the kind a summary counts: succeeded ones when learned, else all
  for (size_t i = 0; i < all; ++i) {
    c.below[i] = accuracy[i] < min_accuracy;  // NaN (not recorded) compares false: counted
    if (c.learned && !succeeded[i]) continue;
    c.counted[i] = !c.below[i];
    (c.below[i] ? below : n) += 1;
  }
  const std::string threshold = "accuracy " + format_number(min_accuracy, 3);
  if (n == 0) {
    c.text = "none of " + std::to_string(all) + " reaches " + threshold;
    return c;
  }
  c.text = std::to_string(n) + (c.learned ? " succeeded" : " failed") +
           (n < all ? " of " + std::to_string(all) : std::string()) +
           (below > 0 ? " (" + std::to_string(below) + " below " + threshold + ")" : std::string());
  return c;
}

Counted counted_configurations(const std::vector<const StoredOutcome*>& outcomes,
                               double min_accuracy) {
  std::vector<bool> succeeded;
  std::vector<double> accuracy;
  for (const StoredOutcome* o : outcomes) {
    succeeded.push_back(o->value["status"].as<std::string>("") == "succeeded");
    accuracy.push_back(o->value["final_accuracy"].as<double>(std::nan("")));
  }
  return counted_configurations(succeeded, accuracy, min_accuracy);
}

long chosen_configuration(const StepResult& step, const std::function<bool(size_t)>& usable) {
  const auto ranked = ranked_configurations(step, usable);
  return ranked.empty() ? -1 : static_cast<long>(ranked.front());
}

int run_study(StudyRun& run, const std::vector<PreparedCell>& cells) {
  return run.config.study->run(run, cells);
}

}  // namespace induct
