// Studies: what `induct run` does with a study file (docs/method.md sections 4-7).
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>

#include "config/study_config.hpp"
#include "data/dataset.hpp"
#include "exec/runner.hpp"
#include "plugin/registry.hpp"
#include "store/store.hpp"
#include "study/kind.hpp"
#include "study/progress.hpp"
#include "study/search.hpp"
#include "train/trial.hpp"

namespace induct {

// A cell checked against its plugins: options resolved, task tabulated, model built once
// and its output shape checked, data sizes planned.
struct PreparedCell {
  Cell cell;
  std::string label;  // e.g. "modular(m=5) lstm acot uniform L=10"
  int64_t num_actions = 0;
  int64_t num_states = 0;
  int64_t vocab_size = 0;
  int64_t max_length = 0;  // tokens
  int64_t parameters = 0;
  bool action_positions = false;  // the format says where each action's token is (probe)
  uint64_t n = 0;                 // kinds that read N (CellKeys::n): N (0: N_max)
  DataPlan plan;
  std::string plugin_versions;
  std::string key() const;  // hash of the resolved cell and plugin versions
};

// Reads the task, model and data sections of one cell (unknown keys in them are errors),
// builds the model once for sequences of up to `max_actions` actions (0: L).
PreparedCell prepare_cell(const CellSpec& spec, const PluginRegistry& registry,
                          int max_actions = 0);

// Every cell a study will train, prepared (Study::expand: a sharing study's Fixed and Uniform
// cells included), in order: checks the whole study before anything runs.
std::vector<PreparedCell> prepare_study(const StudyConfig& study, const PluginRegistry& registry);

// The training-set size of a cell of a kind that reads N (N, or N_max for "max"); a ConfigError
// naming the cell when it exceeds N_max or the cell has nothing to train on.
uint64_t training_size(const StudyConfig& study, const PreparedCell& cell);

// The lengths a study reads trained models at (lengthgen, probe): round(m x L) for each
// multiple m of a cell's L, from the list `key` of the study's section.
struct LengthMultiples {
  std::string section, key;  // "lengthgen", "multiples": where they are read, for errors
  std::vector<double> multiples;
  // Reads the list (not empty, every multiple >= 1; `multiples` is the default).
  void read(const Options& root);
  std::vector<int> lengths(int L) const;  // sorted, distinct
  // A ConfigError at section.key when a length at L would exceed kMaxLength.
  void check(const Options& root, int L) const;
  // The cell, its model built for the longest length.
  PreparedCell prepare(const CellSpec& spec, const PluginRegistry& registry) const;
};
// "x2", "x1.5": a length as a multiple of L, as tables and figures name it.
std::string multiple_label(int length, int L);

// "[study] cell 3/12 <label>": how progress lines name a cell.
std::string cell_context(const StudyConfig& study, size_t index, size_t count,
                         const std::string& label);

std::string describe_cell(const PreparedCell& cell);

// Optimisation steps per second of one configuration of the cell trained here, as a worker
// trains it (at N = min(N, 640), so at full batches where N_max allows; the first learning
// rate and seed; this process's threads): the difference of two short runs, so that building
// the data and the final evaluation cancel out (Short-to-Long at that N trains on its shortest
// sequences). NaN when the runs give no difference (a configuration that diverges at once).
struct StepRate {
  uint64_t n = 0;  // the training-set size it was measured at
  double per_second = 0;
};
StepRate measure_step_rate(const StudyConfig& study, const PreparedCell& cell,
                           const PluginRegistry& registry);
// What decides that rate, as text (`validate --time` times each distinct one once): the
// model, the format, the length profile (the distribution, the training set's longest length and
// its mean within 10%) and the training-set size it is timed at. Not the task's vocabulary, which
// changes the embedding and output layers only.
std::string step_shape(const StudyConfig& study, const PreparedCell& cell,
                       const PluginRegistry& registry);

struct StudyRun {
  const StudyConfig& config;
  const PluginRegistry& registry;
  Store& store;
  TrialRunner& runner;
  Progress& progress;
  std::filesystem::path out_dir;
  std::ostream& out;
};

// One configuration of a cell at size n; with the run, as the run trains it (its training
// state in OUT/states/, run.state_every).
TrialSpec make_trial(const StudyConfig& study, const PreparedCell& cell, uint64_t n, double lr,
                     uint64_t seed);
TrialSpec make_trial(const StudyRun& run, const PreparedCell& cell, uint64_t n, double lr,
                     uint64_t seed);

// All configurations (learning rate x seed) of one cell at one training-set size. Trials in
// the store are reused; the rest run. `context` prefixes the status line.
struct StepOptions {
  bool first_success = false;  // the first success cancels the others (it decides the step)
  YamlMap measurements;  // name -> settings, taken after each training (train/measurement.hpp)
  // kSave: keep each trained model in OUT/checkpoints/ (for rerunning or extending what a study
  // read from it); kRequire: also train a stored trial again when its checkpoint is missing
  // (the same result, now saved), for studies that read the models themselves.
  enum class Checkpoints { kNone, kSave, kRequire };
  Checkpoints checkpoints = Checkpoints::kNone;
};
struct StepResult {
  bool success = false;
  std::vector<TrialSpec> trials;
  std::vector<TrialResult> results;  // cancelled ones included
  size_t trained = 0;                // trials run now (not reused)
  int64_t optimisation_steps = 0;    // of the trials run now
  size_t errors = 0;
};
StepResult run_step(StudyRun& run, const PreparedCell& cell, uint64_t n, const StepOptions& options,
                    const std::string& context);

// The configuration a study reads after a first-success step: the success with the lowest
// final validation loss, else the finished configuration with the lowest final validation loss
// (a diverged one last), among those `usable` accepts (e.g. with the measurement asked for); -1
// when none (errors). Final, not best: checkpoints and measurements are of the final weights,
// the ones the last evaluation (TrialResult::last) measured; a configuration whose best loss
// came before it fell back to chance is not the model a reader would be shown.
long chosen_configuration(const StepResult& step, const std::function<bool(size_t)>& usable);
// Every such configuration in that order (the first is chosen_configuration's).
std::vector<size_t> ranked_configurations(const StepResult& step,
                                          const std::function<bool(size_t)>& usable);

// Which of the configurations a study analysed its summaries count: those that succeeded, or
// all of them when none did (`learned` false: the numbers then describe unlearned models);
// `text` as tables name them: "2 succeeded", "1 succeeded of 3", "3 failed".
struct Counted {
  std::vector<bool> counted;
  bool learned = false;
  std::string text;
};
Counted counted_configurations(const std::vector<bool>& succeeded);

// Where a trial of this run keeps its trained model (StepOptions::checkpoints).
std::string checkpoint_file(const StudyRun& run, const TrialSpec& trial);

// One cell's N* search, as run_searches leaves it.
struct SearchRecord {
  bool complete = true;  // false: a trial error left a step undecided; rerun to retry
  bool learned = false;
  uint64_t nstar = 0, n_max = 0;
  size_t steps = 0;                // sizes tested
  size_t trained = 0;              // trials run now (not reused)
  int64_t optimisation_steps = 0;  // of every trial the steps used, reused ones included
  bool stored = false;             // the whole search came from the store
  // Every failure on the search's path is proven: no configuration was stopped by the failure
  // detector, or those it stopped failed again without it (search.certify). false: one is the
  // detector's verdict, and N* an upper bound (docs/method.md section 5a).
  bool certified = true;
  size_t certification_steps = 0;  // failures re-run without the detector
};
// "N* = 12", "not learned at N_max = 500", "... (stored)", "incomplete (...)"; an uncertified
// N* says so.
std::string describe(const SearchRecord& record);

// Everything that decides a cell's N*: the cell, the grid, training and search settings.
std::string nstar_key(const StudyConfig& config, const SearchSettings& search,
                      const PreparedCell& cell);
// The settings an N* is found with (training, learning rates, seeds, search): part of its key,
// and stored with it (`settings`, the store's outcome columns max_steps, epsilon, settings).
YAML::Node nstar_settings(const StudyConfig& config, const SearchSettings& search);

// The N* searches of every cell (docs/method.md section 5), side by side on the runner's workers,
// reusing stored trials and stored searches; each finished search is stored and logged.
// Returns the records in cell order.
std::vector<SearchRecord> run_searches(StudyRun& run, const std::vector<PreparedCell>& cells,
                                       const SearchSettings& search);

// Runs the study's kind (Study::run).
int run_study(StudyRun& run, const std::vector<PreparedCell>& cells);

}  // namespace induct
