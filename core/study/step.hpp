// What a study's run is handed (StudyRun), and one step: a cell at one training-set size, every
// configuration of the grid (learning rate x seed), stored trials reused.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "config/study_config.hpp"
#include "exec/runner.hpp"
#include "plugin/registry.hpp"
#include "store/store.hpp"
#include "study/prepare.hpp"
#include "study/progress.hpp"
#include "train/trial.hpp"

namespace induct {

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
// those that failed when none succeeded (`learned` false: the numbers then describe unlearned
// models); in both cases only those whose final-state accuracy on the validation set
// (`accuracy`, NaN: not recorded, counted) is at least `min_accuracy` (report.min_accuracy),
// so none may be counted (`below`: each configuration's accuracy is under `min_accuracy`).
// `text` as tables name them: "2 succeeded", "1 succeeded of 3", "3 failed", "2 failed of 3 (1
// below accuracy 0.9)", "none of 3 reaches accuracy 0.9".
struct Counted {
  std::vector<bool> counted;
  std::vector<bool> below;
  bool learned = false;
  std::string text;
  bool any() const;
};
Counted counted_configurations(const std::vector<bool>& succeeded,
                               const std::vector<double>& accuracy, double min_accuracy);
// The same for the stored outcomes of a kind that reads one configuration each (lengthgen,
// probe): their `status` and `final_accuracy`.
Counted counted_configurations(const std::vector<const StoredOutcome*>& outcomes,
                               double min_accuracy);

// Where a trial of this run keeps its trained model (StepOptions::checkpoints).
std::string checkpoint_file(const StudyRun& run, const TrialSpec& trial);

// A stored result of `trial` that a step may reuse instead of training it: finished, and with
// its checkpoint where `checkpoints` is kRequire (a checkpoint that is missing or does not
// verify: nullopt, the trial trains again to the same result; a damaged one is reported).
std::optional<TrialResult> reusable_result(StudyRun& run, const TrialSpec& trial,
                                           StepOptions::Checkpoints checkpoints);

// What a step does with a trial's result as it comes back, whichever machinery runs the step
// (run_step, run_searches): the row stored; the training state of a trial cancelled by its
// step's success discarded (its N is decided, so the state would never be used; a stop
// signal's cancellations never come here); an error logged after `context`. Returns whether the
// trial trained now (finished, or cancelled after some steps).
bool record_result(StudyRun& run, const TrialSpec& trial, const TrialResult& result,
                   const std::string& context);

// Runs the study's kind (Study::run).
int run_study(StudyRun& run, const std::vector<PreparedCell>& cells);

}  // namespace induct
