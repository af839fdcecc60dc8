// Batched matrix products for the small per-head products of recurrent and attention-like
// layers.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// a [..., M, K] times b [..., K, N] -> [..., M, N], as torch::matmul for equal leading
// dimensions. On the CPU in float32 one autograd node whose products (forward, and the
// gradients of a and b) run one sgemm per batch item on the operands' own memory (a transposed
// view, such as k.transpose(-2, -1), is read as stored): LibTorch's CPU bmm without MKL walks
// the batch through a select, a conjugation check and a strided copy per item, which with the
// many tiny products of a model of width 64 costs more than the products (docs/performance.md).
// Leading dimensions that differ (broadcasting), other devices and types call torch::matmul.
torch::Tensor INDUCT_SDK_API batched_matmul(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace induct::nn
