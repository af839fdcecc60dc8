// The training loop and evaluation (docs/method.md section 4). The optimizer and the loop are the
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
  // The failure detector's plateau reference (TrainSettings::plateau_level; plateau_loss).
  double chance_loss = 0;
};

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

// Adam (betas 0.9/0.999, eps 1e-8, no weight decay), batches walking the training set in
// shuffled passes, evaluation every eval_every steps and at the last step, early stop when
// the validation loss drops below epsilon, a non-finite training loss ends the run as
// diverged. The data order is seeded from `seed`; the caller seeds initialisation.
TrialResult train_model(SequenceModel& model, const TrainData& data, const TrainSettings& settings,
                        double lr, uint64_t seed, torch::Device device,
                        TrainObserver* observer = nullptr, const StateFile* state = nullptr);

// The failure detector of TrainSettings (its rules are described there): whether a run
// should stop as failed after the evaluation that ends `history`, whose best validation loss
// so far is `best_loss`, for a cell whose chance loss is `chance_loss`. A function of these
// alone, so a stored history replays to the verdict the trainer gave (bench/detector).
enum class Verdict { kGoOn, kStalled, kMemorised, kPlateau };
const char* to_string(Verdict verdict);  // "" for kGoOn, else the rule's name
Verdict failure_verdict(const std::vector<EvalPoint>& history, double best_loss, double chance_loss,
                        const TrainSettings& settings);

// The loss of predicting the marginal distribution of the sets' targets together (its
// entropy): the loss of a model that has learned nothing about the sequences. ln 2 for parity
// with Outcome supervision over a balanced set.
double chance_loss(const std::vector<const ExampleSet*>& sets);

// Loss, token accuracy and final-state accuracy (teacher forcing), overall and per length.
EvalMetrics evaluate(SequenceModel& model, const ExampleSet& set, int64_t pad, int64_t batch_size,
                     torch::Device device);

// Examples order[0..count) as padded [B, W] token and target tensors, encoded now; in pinned
// host memory when `pinned` (for a non-blocking copy to a GPU; needs a CUDA LibTorch).
struct Batch {
  torch::Tensor tokens;
  torch::Tensor targets;
};
Batch make_batch(const ExampleSet& set, const int64_t* order, size_t count, int64_t pad,
                 bool pinned = false);

}  // namespace induct
