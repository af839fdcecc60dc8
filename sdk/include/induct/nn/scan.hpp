// Selective scan of Mamba (Gu and Dao 2023).
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// h_t = exp(delta_t * A) h_{t-1} + delta_t * B_t * x_t,  y_t = C_t . h_t + D * x_t,  h_0 = 0.
//   x, delta: [B, T, Di]   A: [Di, N]   Bm, C: [B, T, N]   D: [Di]   ->  y: [B, T, Di]
// On the CPU a fused kernel with its own backward: each (batch, channel) walks time with its
// state (one row of N numbers) in a small buffer instead of [B, Di, N] tensors per step, its
// decays computed in the same pass, and backward recomputes the states. Elsewhere
// (CUDA) the reference loop below. Both are sequential in time: numerically safe in float32
// (no cumulative products or log-sums).
torch::Tensor INDUCT_SDK_API selective_scan(const torch::Tensor& x, const torch::Tensor& delta,
                                            const torch::Tensor& A, const torch::Tensor& Bm,
                                            const torch::Tensor& C, const torch::Tensor& D);

// The same recurrence as a loop of tensor operations differentiated by autograd (any device).
torch::Tensor INDUCT_SDK_API selective_scan_reference(const torch::Tensor& x,
                                                      const torch::Tensor& delta,
                                                      const torch::Tensor& A,
                                                      const torch::Tensor& Bm,
                                                      const torch::Tensor& C,
                                                      const torch::Tensor& D);

}  // namespace induct::nn
