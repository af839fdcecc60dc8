// A study file, read and checked (docs/config-reference.md). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "induct/options.hpp"
#include "train/settings.hpp"

namespace induct {

// The N* search of docs/method.md section 5 (study/search.hpp runs it).
struct SearchSettings {
  double factor = 1000;     // M: the geometric phase divides N by M while N succeeds
  int max_steps = 20;       // tested sizes in all, N_max included
  double tolerance = 0.02;  // binary phase stops when hi - lo <= max(1, tolerance * hi)
  // One success decides a step, so the first cancels the others (project decision; false
  // trains every configuration to its own stop, as the paper's procedure: same N*, more cost).
  bool cancel_on_success = true;
  // Re-run the failures that decide N* (the largest failure below N*, or N_max) with the
  // failure detector off where the detector judged them; a success there lowers N*.
  bool certify = false;
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
