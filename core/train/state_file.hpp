// A training's state file: written during a training, read back to go on from it.
#pragma once

#include <torch/types.h>

#include <array>
#include <optional>
#include <string>

#include "induct/model.hpp"
#include "train/optimizer.hpp"
#include "train/trial.hpp"

namespace induct {

// Where a training keeps its state: the parameters and buffers, Adam's moments, the data
// order's generator and position, torch's default generators and the history so far, one
// LibTorch archive written to a temporary file and renamed. A training given a state file goes
// on from it when it holds an earlier point of the same trajectory (TrialSpec::trajectory_key)
// that its own settings would have reached (no success, no detector verdict before it): a
// killed run resumes from its last save, and a longer step limit or the detector off goes on
// from where a shorter or stopped run ended. The result is the same, value for value, as a
// training run in one go. The file is removed when the training succeeds or diverges; a failed
// one leaves its final state when keep_final says so.
struct StateFile {
  std::string path;
  std::string trajectory;  // TrialSpec::trajectory_key(): checked before going on
  int64_t every =
      0;  // save at the first evaluation at least this many steps after the last (0: never mid-run)
  bool keep_final = false;    // a failed training leaves its final state
  bool keep_stopped = false;  // one the failure detector stopped does
};

// A training's state (StateFile), as read back.
struct SavedState {
  TrialResult result;  // steps, history, best loss, last evaluation and seconds so far
  torch::Tensor exp_avg, exp_avg_sq;
  int64_t adam_steps = 0;
  std::array<uint64_t, 4>
      pass_rng{};      // the data order's generator before the current pass's shuffle
  int64_t cursor = 0;  // the next example of that pass
  torch::Tensor cpu_generator, device_generator;
};

// The state of `file` when it belongs to this trajectory and these settings reach it (reaches(),
// train/detector.hpp); the model's parameters and buffers are loaded then (before the optimizer
// takes them over). `unreached`: the file is a state of this trajectory that these settings would
// not reach. A file that does not read back is reported on stderr and not used.
std::optional<SavedState> read_state(const StateFile& file, SequenceModel& model,
                                     const TrainSettings& settings, double chance,
                                     torch::Device device, bool& unreached);

// Writes the training state (one archive, whole or absent, with a digest); a failure is reported
// once per training (`reported`), not at every save, and the training goes on.
void write_state(const StateFile& file, SequenceModel& model, const FlatAdam& optimizer,
                 const std::array<uint64_t, 4>& pass_rng, int64_t cursor, const TrialResult& result,
                 torch::Device device, bool& reported);

// torch's default generators (dropout draws from the CPU one) set to those a state saved.
void restore_generators(const SavedState& state, torch::Device device);

}  // namespace induct
