// How a trial trains: the `training:` section as the trainer reads it. Torch-free, and free of
// the study schema (config/ reads it from a study file; trials carry it to the workers).
#pragma once

#include <cstdint>
#include <string>

namespace induct {

// How every configuration of the hyper-parameter grid is trained (docs/method.md section 4).
// Part of a trial's identity in the store: changing any of these is a new trial.
struct TrainSettings {
  int64_t batch_size = 64;
  int64_t max_steps = 250'000;
  int64_t eval_every = 100;
  int64_t eval_batch_size = 500;
  double epsilon = 1e-4;
  bool curriculum = true;  // Short-to-Long batches in ascending length (docs/method.md section 2, a
                           // project decision)
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
  // chance loss (the entropy of the targets' marginal distribution, over the task's sequences
  // or the validation set: plateau_level). There a configuration is never stalled: parity with
  // Outcome supervision sits at ln 2 for thousands of steps before it learns.
  int64_t stall_window = 0;
  double stall_improvement = 0.01;
  double stall_projection = 0;
  double stall_fraction = 0;
  double plateau_margin = 0.2;
  // Where the chance loss is measured: kTask, over the cell's sequences (ln 2 for Outcome
  // parity, whatever the split); kValidation, over the validation set's own targets (a small
  // set's labels are rarely balanced: 0.45 for a 5/1 split of parity).
  enum class PlateauLevel { kTask, kValidation };
  PlateauLevel plateau_level = PlateauLevel::kTask;
  int64_t plateau_patience = 0;
  double memorised_loss = 0;
};

const char* to_string(TrainSettings::PlateauLevel level);                 // "task", "validation"
TrainSettings::PlateauLevel plateau_level_from(const std::string& text);  // throws: names both

}  // namespace induct
