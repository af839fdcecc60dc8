// Selective scan of Mamba (Gu and Dao 2023).
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// What Mamba's block does around the recurrence, done inside the scan's node (as the reference
// implementation's selective_scan_fn): the step sizes from the raw projection, and the gate.
struct ScanOptions {
  torch::Tensor delta_bias;     // [Di]: added to delta first; undefined: none
  bool delta_softplus = false;  // the step sizes are softplus(delta + delta_bias)
  torch::Tensor z;              // [B, T, Di]: the output is y * silu(z); undefined: y
};

// h_t = exp(delta_t * A) h_{t-1} + delta_t * B_t * x_t,  y_t = C_t . h_t + D * x_t,  h_0 = 0.
//   x, delta: [B, T, Di]   A: [Di, N]   Bm, C: [B, T, N]   D: [Di]   ->  y: [B, T, Di]
// (delta after options' bias and softplus; y before options' gate.)
// On the CPU (float32, float64) a fused kernel with its own backward: the states of a block of
// 16 channels (forward) or of one channel (backward, which recomputes them) walk time in a
// small buffer instead of [B, Di, N] tensors per step, their decays computed in the same pass;
// the options' softplus and gate are vectorised passes before and after it in the same node.
// Elsewhere (CUDA) the reference below. Both are sequential in time: numerically safe in
// float32 (no cumulative products or log-sums).
torch::Tensor INDUCT_SDK_API selective_scan(const torch::Tensor& x, const torch::Tensor& delta,
                                            const torch::Tensor& A, const torch::Tensor& Bm,
                                            const torch::Tensor& C, const torch::Tensor& D,
                                            const ScanOptions& options);
torch::Tensor INDUCT_SDK_API selective_scan(const torch::Tensor& x, const torch::Tensor& delta,
                                            const torch::Tensor& A, const torch::Tensor& Bm,
                                            const torch::Tensor& C, const torch::Tensor& D);

// The same as a loop of LibTorch tensor operations differentiated by autograd (any device).
torch::Tensor INDUCT_SDK_API
selective_scan_reference(const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& A,
                         const torch::Tensor& Bm, const torch::Tensor& C, const torch::Tensor& D,
                         const ScanOptions& options);
torch::Tensor INDUCT_SDK_API
selective_scan_reference(const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& A,
                         const torch::Tensor& Bm, const torch::Tensor& C, const torch::Tensor& D);

}  // namespace induct::nn
