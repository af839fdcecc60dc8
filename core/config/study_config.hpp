// A study file, read and checked (docs/config-reference.md). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "induct/options.hpp"

namespace induct {

// How every configuration of the hyper-parameter grid is trained (SPEC.md section 4).
// Part of a trial's identity in the store: changing any of these is a new trial.
struct TrainSettings {
  int64_t batch_size = 64;
  int64_t max_steps = 250'000;
  int64_t eval_every = 100;
  int64_t eval_batch_size = 500;
  double epsilon = 1e-4;
  bool curriculum = true;  // Short-to-Long batches in ascending length (SPEC project decision)
};

// Where and how the trainings run. Not part of a trial's identity.
struct RunSettings {
  int workers = 0;       // 0: one per core (at most one per trial)
  int threads = 1;       // intra-op threads per worker
  int blas_threads = 0;  // 0: cores / workers
  std::string device = "cpu";
  std::vector<std::string> plugin_path;
};

// One cell: what is learned (task), by what (model), from what data.
struct CellSpec {
  Options task;   // the `task:` section; plugins read their keys from it
  Options model;  // the `model:` section
  std::string task_name, model_name;
  std::string format;
  std::string distribution;
  int L = 0;
  ValidationPolicy validation;
  uint64_t n_cap = 16'000'000;
};

struct StudyConfig {
  std::string file;
  std::string kind;  // train (more study kinds: docs/config-reference.md)
  std::string name;
  Options root;
  CellSpec cell;
  uint64_t n = 0;  // training-set size; 0 = N_max
  std::vector<double> learning_rates;
  std::vector<uint64_t> seeds;
  TrainSettings training;
  RunSettings run;
};

// Reads and checks every key the core owns. The task and model sections are read by their
// plugins later; call root.reject_unknown_keys() after that (study/prepare.hpp does).
StudyConfig read_study(const Options& root, const std::string& file);

// Reads a study file with --set overrides applied.
StudyConfig load_study(const std::string& file, const std::vector<std::string>& overrides);

}  // namespace induct
