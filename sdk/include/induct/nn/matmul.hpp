// Batched matrix products for the small per-head products of recurrent and attention-like
// layers, and block-diagonal projections.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// a [..., M, K] times b [..., K, N] -> [..., M, N], as torch::matmul for equal leading
// dimensions. On the CPU in float32 one autograd node whose products (forward, and the
// gradients of a and b) run one sgemm per batch item on the operands' own memory: any view
// whose matrices have one unit stride is read in place (a transpose such as
// k.transpose(-2, -1), per-head views such as x.view({B, T, H, D}).transpose(1, 2), narrowed
// columns), the output's batch dimensions follow a's memory order (so the per-head outputs of
// per-head views reshape back without a copy), and each gradient is written in its operand's
// layout. LibTorch's CPU bmm without MKL walks the batch through a select, a conjugation check
// and a strided copy per item, which with the many tiny products of a model of width 64 costs
// more than the products (docs/performance.md). Leading dimensions that differ
// (broadcasting), other devices and types call torch::matmul.
torch::Tensor INDUCT_SDK_API batched_matmul(const torch::Tensor& a, const torch::Tensor& b);

// A block-diagonal projection: weight [H, out, in] applied to x [..., H * in] block by block,
// y[..., h * out + o] = sum_i weight[h, o, i] x[..., h * in + i] -> [..., H * out] (xLSTM's
// per-head projections). Blocks of 4 x 4 on the CPU in float32 are one vectorised pass each
// way (one lane per block); other sizes run on batched_matmul, reading x in place.
torch::Tensor INDUCT_SDK_API block_diagonal_linear(const torch::Tensor& x,
                                                   const torch::Tensor& weight);

}  // namespace induct::nn
