// The `train` study: one cell, one N, the whole (learning rate x seed) grid, each
// configuration to its own stop. Prints and writes the per-run table.
#include <map>
#include <ostream>

#include "report/table.hpp"
#include "study/study.hpp"

namespace induct {

int run_train_study(StudyRun& run, const PreparedCell& cell) {
  const StudyConfig& config = run.config;
  const uint64_t n = config.n == 0 ? cell.plan.n_max : config.n;
  if (n > cell.plan.n_max)
    config.root.section("data").fail(
        "N", "N = " + std::to_string(n) + " exceeds N_max = " + std::to_string(cell.plan.n_max) +
                 " for this cell (available sequences minus the validation set)");
  if (n == 0)
    config.root.section("data").fail("N", "this cell has no training sequences (N_max = 0)");

  std::vector<TrialSpec> trials;
  for (double lr : config.learning_rates)
    for (uint64_t seed : config.seeds) trials.push_back(make_trial(config, cell, n, lr, seed));

  std::vector<TrialResult> results(trials.size());
  std::vector<size_t> pending_index;
  std::vector<TrialSpec> pending;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (auto stored = run.store.find_finished(trials[i].key())) {
      results[i] = *stored;
    } else {
      pending_index.push_back(i);
      pending.push_back(trials[i]);
    }
  }
  run.progress.log("[" + config.name + "] N = " + std::to_string(n) + ", " +
                   std::to_string(trials.size()) + " configurations (" +
                   std::to_string(trials.size() - pending.size()) + " already in " +
                   run.store.file().filename().string() + "), " +
                   std::to_string(run.runner.parallelism()) + " worker(s)");

  // Live state for the status line.
  struct Live {
    int64_t step = 0;
    double best = 0;
  };
  std::map<size_t, Live> live;
  size_t finished = 0, errors = 0;
  auto label = [&](size_t i) {
    return "lr=" + format_number(pending[i].lr, 3) + " seed=" + std::to_string(pending[i].seed);
  };
  auto show = [&] {
    std::string line = "[" + config.name + "] " + std::to_string(finished) + "/" +
                       std::to_string(pending.size()) + " done";
    for (const auto& [i, state] : live)
      line += " | " + label(i) + " step " + std::to_string(state.step) +
              (state.step ? " best " + format_number(state.best, 3) : "");
    line += " | " + format_duration(run.progress.elapsed());
    run.progress.status(line);
  };

  RunCallbacks callbacks;
  callbacks.on_start = [&](size_t i) {
    live[i] = Live{};
    show();
  };
  callbacks.on_progress = [&](size_t i, const EvalPoint& point, double best) {
    live[i] = Live{point.step, best};
    show();
  };
  callbacks.on_done = [&](size_t i, const TrialResult& result) {
    live.erase(i);
    ++finished;
    results[pending_index[i]] = result;
    run.store.put(config.name, pending[i], result);
    std::string line = "[" + config.name + "] " + label(i) + ": " + to_string(result.status) +
                       " after " + std::to_string(result.steps) + " steps, best validation loss " +
                       format_number(result.best_loss, 3) + " (" +
                       format_duration(result.seconds) + ")";
    if (result.status == TrialStatus::kError) {
      ++errors;
      line += "\n  " + result.error;
    }
    run.progress.log(line);
    show();
    return false;
  };
  run.runner.run(pending, callbacks);
  run.progress.clear();

  Table table;
  table.header = {"lr", "seed", "status", "steps", "best val loss", "final-state acc",
                  "token acc", "seconds"};
  size_t successes = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    const TrialResult& r = results[i];
    successes += r.succeeded();
    const bool measured = r.status != TrialStatus::kError && r.status != TrialStatus::kCancelled;
    table.rows.push_back({format_number(trials[i].lr, 3), std::to_string(trials[i].seed),
                          to_string(r.status), std::to_string(r.steps),
                          measured ? format_number(r.best_loss, 4) : "-",
                          measured ? format_number(r.last.final_accuracy, 4) : "-",
                          measured ? format_number(r.last.token_accuracy, 4) : "-",
                          format_number(r.seconds, 3)});
  }
  const std::string summary = std::to_string(successes) + " of " + std::to_string(trials.size()) +
                              " configurations reached validation loss < " +
                              format_number(config.training.epsilon, 3) + " with N = " +
                              std::to_string(n);
  run.out << "\n" << table.text() << "\n" << summary << "\n";
  write_file_atomically((run.out_dir / "train.md").string(),
                        "# " + config.name + ": per-run results\n\n" + table.markdown() + "\n" +
                            summary + "\n");
  write_file_atomically((run.out_dir / "train.csv").string(), table.csv());
  if (errors > 0)
    run.out << errors << " configuration(s) stopped with an error (see above); rerun to retry them\n";
  return errors > 0 ? 1 : 0;
}

}  // namespace induct
