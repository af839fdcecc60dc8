// A study file, read and checked (docs/config-reference.md). Torch-free.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "induct/options.hpp"
#include "train/settings.hpp"

namespace induct {

class Study;

// Where and how the trainings run. Not part of a trial's identity.
struct RunSettings {
  int workers = 0;       // 0: one per core (at most one per trial)
  int threads = 1;       // intra-op threads per worker
  int blas_threads = 0;  // 0: cores / workers
  std::string device = "cpu";
  std::vector<std::string> plugin_path;
  // Training states (OUT/states/, docs/store.md): a training saves its state at the first
  // evaluation at least state_every steps after its last save (0: never mid-run), and goes on
  // from it when run again; a failed training leaves its final state when keep_states says so
  // ("stopped": stopped by the failure detector, what search.certify goes on from; "failed":
  // every failure, to raise max_steps later; "none").
  int64_t state_every = 10'000;
  std::string keep_states = "stopped";
};

// One cell: what is learned (task), by what (model), from what data. Read from the study
// document with one grid point applied.
struct CellSpec {
  Options root;   // that document
  Options task;   // its `task:` section; the task plugin reads its keys from it
  Options model;  // its `model:` section
  std::string task_name, model_name;
  std::string format;
  std::string distribution;  // empty when the study sets it (CellKeys::distribution_and_L)
  int L = 0;                 // 0 then
  ValidationPolicy validation;
  uint64_t n_cap = 16'000'000;
  uint64_t n = 0;  // studies that read N (CellKeys::n): the training-set size; 0 = N_max
  std::string grid_label;  // "task.m=5, data.L=10": the grid point, empty without a grid
};

struct StudyConfig {
  std::string file;
  std::string kind;  // study_kinds(): train | nstar | sharing | lengthgen | probe
  std::shared_ptr<const Study> study;  // the kind, with its own sections read (study/kind.hpp)
  std::string name;
  Options root;      // the study document without grid values
  std::vector<CellSpec> cells;
  std::vector<double> learning_rates;
  std::vector<uint64_t> seeds;
  TrainSettings training;
  RunSettings run;
};

// The longest sequence a study may train or evaluate on: far past the paper (L <= 40), and
// small enough that asking for more is an error naming the key, not a failure in the allocator.
inline constexpr long kMaxLength = 100'000;

// Reads and checks every key the core owns, expanding `grid:` into cells (each from the file
// re-read with that grid point applied). Keys of the task and model sections are read by
// their plugins later (study/prepare.hpp checks them); everything else unknown is an error
// here.
StudyConfig read_study(const std::string& file, const std::vector<std::string>& overrides);
// The same from text (tests).
StudyConfig read_study_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides = {});

}  // namespace induct
