// Evaluation (teacher forcing) and the batches of a set of examples.
#pragma once

#include <torch/types.h>

#include <vector>

#include "format/format.hpp"
#include "induct/model.hpp"
#include "train/trial.hpp"

namespace induct {

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
