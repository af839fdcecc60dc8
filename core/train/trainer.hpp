// The training loop and evaluation (SPEC.md section 4). The optimizer and the loop are the
// core's, never a plugin's.
#pragma once

#include <torch/types.h>

#include "format/format.hpp"
#include "induct/model.hpp"
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
};

// Adam (betas 0.9/0.999, eps 1e-8, no weight decay), batches walking the training set in
// shuffled passes, evaluation every eval_every steps and at the last step, early stop when
// the validation loss drops below epsilon, a non-finite training loss ends the run as
// diverged. The data order is seeded from `seed`; the caller seeds initialisation.
TrialResult train_model(SequenceModel& model, const TrainData& data, const TrainSettings& settings,
                        double lr, uint64_t seed, torch::Device device,
                        TrainObserver* observer = nullptr);

// The failure detector of TrainSettings (stall_window, stall_improvement, stall_projection):
// true when a run should stop as failed after the evaluation that ends `history`, whose best
// validation loss so far is `best_loss`.
bool stalled(const std::vector<EvalPoint>& history, double best_loss, const TrainSettings& settings);

// Loss, token accuracy and final-state accuracy (teacher forcing), overall and per length.
EvalMetrics evaluate(SequenceModel& model, const ExampleSet& set, int64_t pad,
                     int64_t batch_size, torch::Device device);

// Examples order[0..count) as padded [B, W] token and target tensors, encoded now.
struct Batch {
  torch::Tensor tokens;
  torch::Tensor targets;
};
Batch make_batch(const ExampleSet& set, const int64_t* order, size_t count, int64_t pad);

}  // namespace induct
