// The training loop (docs/method.md section 4): Adam over shuffled passes, evaluation, the
// stops. The optimizer and the loop are the core's, never a plugin's.
#pragma once

#include <torch/types.h>

#include "format/format.hpp"
#include "induct/model.hpp"
#include "train/state_file.hpp"
#include "train/trial.hpp"

namespace induct {

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  // After each evaluation.
  virtual void on_eval(const EvalPoint& point, double best_loss) {}
  // Checked before every step: true stops the run as cancelled.
  virtual bool should_stop() { return false; }
};

struct TrainData {
  const ExampleSet& train;
  const ExampleSet& validation;  // empty: evaluate on the training set (tiny spaces)
  int64_t pad = 0;
  bool ascending = false;  // batches in ascending length within each pass
  // The failure detector's plateau reference (TrainSettings::plateau_level; plateau_loss).
  double chance_loss = 0;
};

// Adam (betas 0.9/0.999, eps 1e-8, no weight decay), batches walking the training set in
// shuffled passes, evaluation every eval_every steps and at the last step, early stop when
// the validation loss drops below epsilon, a non-finite training loss ends the run as
// diverged. The data order is seeded from `seed`; the caller seeds initialisation.
TrialResult train_model(SequenceModel& model, const TrainData& data, const TrainSettings& settings,
                        double lr, uint64_t seed, torch::Device device,
                        TrainObserver* observer = nullptr, const StateFile* state = nullptr);

}  // namespace induct
