// One (cell, N): the whole hyper-parameter grid, reusing stored trials.
#include <cmath>
#include <limits>
#include <map>

#include "study/study.hpp"

namespace induct {

StepResult run_step(StudyRun& run, const PreparedCell& cell, uint64_t n, bool first_success,
                    const std::vector<int>& eval_lengths, const std::string& context) {
  const StudyConfig& config = run.config;
  StepResult step;
  for (double lr : config.learning_rates)
    for (uint64_t seed : config.seeds) {
      TrialSpec trial = make_trial(config, cell, n, lr, seed);
      trial.eval_lengths = eval_lengths;
      trial.eval_samples = eval_lengths.empty() ? 0 : config.lengthgen.samples;
      // A study that reads trained models (length generalization) keeps them: OUT/checkpoints/.
      if (!eval_lengths.empty())
        trial.checkpoint_dir = std::filesystem::absolute(run.out_dir / "checkpoints").string();
      step.trials.push_back(std::move(trial));
    }
  step.results.assign(step.trials.size(), TrialResult::cancelled());

  std::vector<size_t> pending_index;
  std::vector<TrialSpec> pending;
  for (size_t i = 0; i < step.trials.size(); ++i) {
    if (auto stored = run.store.find_finished(step.trials[i].key())) {
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
    std::string line = context + " | " + std::to_string(done) + "/" + std::to_string(pending.size()) +
                       " trials";
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
    run.store.put(config.name, pending[i], result);
    if (result.status != TrialStatus::kCancelled || result.steps > 0) {
      ++step.trained;
      step.optimisation_steps += result.steps;
    }
    if (std::isfinite(result.best_loss)) best = std::min(best, result.best_loss);
    if (result.status == TrialStatus::kError) {
      ++step.errors;
      run.progress.log(context + " | " + pending[i].configuration() + ": error: " + result.error);
    }
    step.success = step.success || result.succeeded();
    show();
    return first_success && result.succeeded();
  };
  run.runner.run_list(pending, callbacks);
  return step;
}

int run_study(StudyRun& run, const std::vector<PreparedCell>& cells) {
  const std::string& kind = run.config.kind;
  if (kind == "train") return run_train_study(run, cells);
  if (kind == "nstar") return run_nstar_study(run, cells);
  if (kind == "sharing") return run_sharing_study(run, cells);
  if (kind == "lengthgen") return run_lengthgen_study(run, cells);
  throw std::logic_error("unknown study kind " + kind);
}

}  // namespace induct
