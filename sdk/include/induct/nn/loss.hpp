// Training losses.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// Mean cross-entropy of logits [N, V] against targets [N] (int64), rows whose target is
// ignore_index left out, as torch::nn::functional::cross_entropy with that ignore_index and
// mean reduction (NaN when every row is left out). On the CPU in float32 one pass over the
// logits forward and one backward (LibTorch 1.13 runs log_softmax, nll_loss and their two
// backward operations: about 4% of a small LSTM step); elsewhere LibTorch's.
torch::Tensor INDUCT_SDK_API cross_entropy(const torch::Tensor& logits,
                                           const torch::Tensor& targets,
                                           int64_t ignore_index = -100);

}  // namespace induct::nn
