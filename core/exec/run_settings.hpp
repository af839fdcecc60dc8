// The `run:` section of a study: where and how the trainings run (config/ reads it, exec/
// acts on it). Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace induct {

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

}  // namespace induct
