// The `train` study: each cell at one N, the whole (learning rate x seed) grid, each
// configuration to its own stop. Prints and writes the per-run table.
#include <ostream>

#include "report/reports.hpp"
#include "study/kind.hpp"
#include "study/step.hpp"
#include "util/files.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

class TrainStudy final : public Study {
 public:
  CellKeys cell_keys() const override { return {true, CellKeys::N::kRequired}; }
  int run(StudyRun& run, const std::vector<PreparedCell>& cells) const override;
};

int TrainStudy::run(StudyRun& run, const std::vector<PreparedCell>& cells) const {
  const StudyConfig& config = run.config;
  Table table;
  table.header = trial_columns();
  if (cells.size() > 1) table.header.insert(table.header.begin(), "cell");
  size_t errors = 0, successes = 0, total = 0;
  for (size_t c = 0; c < cells.size(); ++c) {
    const PreparedCell& cell = cells[c];
    const uint64_t n = training_size(config, cell);
    const std::string context =
        cell_context(config, c, cells.size(), cell.label) + " N=" + std::to_string(n);
    StepResult step = run_step(run, cell, n, StepOptions{}, context);
    run.progress.clear();
    run.progress.log(context + ": " + std::to_string(step.trials.size() - step.trained) +
                     " stored, " + std::to_string(step.trained) + " trained");
    errors += step.errors;
    for (size_t i = 0; i < step.trials.size(); ++i) {
      const TrialSpec& t = step.trials[i];
      const TrialResult& r = step.results[i];
      ++total;
      successes += r.succeeded();
      std::vector<std::string> row = trial_row(t, r);
      if (cells.size() > 1) row.insert(row.begin(), cell.label);
      table.rows.push_back(row);
    }
  }
  const std::string summary = std::to_string(successes) + " of " + std::to_string(total) +
                              " configurations reached validation loss < " +
                              format_number(config.training.epsilon, 3);
  run.out << "\n" << table.text() << "\n" << summary << "\n";
  write_file_atomically(
      (run.out_dir / "train.md").string(),
      "# " + config.name + ": per-run results\n\n" + table.markdown() + "\n" + summary + "\n");
  write_file_atomically((run.out_dir / "train.csv").string(), table.csv());
  if (errors > 0)
    run.out << errors
            << " configuration(s) stopped with an error (see above); rerun to retry them\n";
  return errors > 0 ? 1 : 0;
}

}  // namespace

std::unique_ptr<Study> make_train_study() { return std::make_unique<TrainStudy>(); }

}  // namespace induct
