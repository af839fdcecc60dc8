// A study file, read and checked (docs/config-reference.md). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "induct/options.hpp"
#include "study/search.hpp"

namespace induct {

// How every configuration of the hyper-parameter grid is trained (docs/method.md section 4).
// Part of a trial's identity in the store: changing any of these is a new trial.
struct TrainSettings {
  int64_t batch_size = 64;
  int64_t max_steps = 250'000;
  int64_t eval_every = 100;
  int64_t eval_batch_size = 500;
  double epsilon = 1e-4;
  bool curriculum = true;  // Short-to-Long batches in ascending length (docs/method.md section 2, a project decision)
  // Failure detector (project extension, off by default and in paper-faithful configs; the
  // rules and their validation: docs/performance.md, "Failure detector"). 0: off. A
  // configuration is stopped as failed, with the rule that stopped it recorded, when
  // - stalled: off its starting plateau, its best validation loss has not fallen by
  //   stall_improvement (relative) over the window (the last stall_window steps, or the last
  //   stall_fraction of the steps run when that is longer), or (stall_projection =
  //   k > 0), falling on at k times its rate over that window (in log loss), it would still be
  //   above epsilon at max_steps;
  // - memorised: its training loss (mean since the last evaluation) is below memorised_loss
  //   (> 0) and its best validation loss has not fallen by stall_improvement over the window;
  // - plateau: after plateau_patience steps (> 0) it has not left its starting plateau.
  // The starting plateau: best validation loss at or above (1 - plateau_margin) x the cell's
  // chance loss (the entropy of the targets' marginal distribution). There a configuration is
  // never stalled: parity with Outcome supervision sits at ln 2 for thousands of steps before
  // it learns.
  int64_t stall_window = 0;
  double stall_improvement = 0.01;
  double stall_projection = 0;
  double stall_fraction = 0;
  double plateau_margin = 0.2;
  int64_t plateau_patience = 0;
  double memorised_loss = 0;
};

// Where and how the trainings run. Not part of a trial's identity.
struct RunSettings {
  int workers = 0;       // 0: one per core (at most one per trial)
  int threads = 1;       // intra-op threads per worker
  int blas_threads = 0;  // 0: cores / workers
  std::string device = "cpu";
  std::vector<std::string> plugin_path;
};

// Length generalization (docs/method.md section 7): after training, final-state accuracy on
// sequences of round(multiple x L) actions.
struct LengthGenSettings {
  std::vector<double> multiples{1, 1.5, 2, 3, 4};  // 1: the trained maximum itself
  double report_multiple = 2;  // the column of the paper's Table 2
  uint64_t samples = 500;      // sequences per evaluated length
};

// One cell: what is learned (task), by what (model), from what data. Read from the study
// document with one grid point applied.
struct CellSpec {
  Options root;   // that document
  Options task;   // its `task:` section; the task plugin reads its keys from it
  Options model;  // its `model:` section
  std::string task_name, model_name;
  std::string format;
  std::string distribution;  // empty for sharing studies (the study sets it)
  int L = 0;                 // 0 for sharing studies
  ValidationPolicy validation;
  uint64_t n_cap = 16'000'000;
  uint64_t n = 0;  // train and lengthgen: the training-set size; 0 = N_max
  std::string grid_label;  // "task.m=5, data.L=10": the grid point, empty without a grid
};

struct StudyConfig {
  std::string file;
  std::string kind;  // train | nstar | sharing | lengthgen
  std::string name;
  Options root;      // the study document without grid values
  std::vector<CellSpec> cells;
  std::vector<double> learning_rates;
  std::vector<uint64_t> seeds;
  TrainSettings training;
  RunSettings run;
  SearchSettings search;
  LengthGenSettings lengthgen;
  std::vector<int> sharing_lengths;  // sharing: the L of each kappa(L)
};

extern const std::vector<std::string> kStudyKinds;

// Reads and checks every key the core owns, expanding `grid:` into cells (each from the file
// re-read with that grid point applied). Keys of the task and model sections are read by
// their plugins later (study/prepare.hpp checks them); everything else unknown is an error
// here.
StudyConfig read_study(const std::string& file, const std::vector<std::string>& overrides);
// The same from text (tests).
StudyConfig read_study_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides = {});

}  // namespace induct
