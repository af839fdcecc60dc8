// Depthwise causal convolution along time (Mamba's short convolution before its scan).
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// y[b, t, c] = act(bias[c] + sum_k weight[c, k] x[b, t - K + 1 + k, c]), x before t = 0 being 0;
// act is SiLU when `silu`, else the identity.
//   x: [B, T, C]   weight: [C, K] (a depthwise Conv1d's [C, 1, K] weight squeezed)   bias: [C]
//   or undefined   ->  [B, T, C]
// On the CPU in float32 one vectorised pass each way (backward recomputes the pre-activation);
// otherwise LibTorch's operations (causal_conv1d_reference).
torch::Tensor INDUCT_SDK_API causal_conv1d(const torch::Tensor& x, const torch::Tensor& weight,
                                           const torch::Tensor& bias, bool silu);

// The same as K shifted multiply-adds of LibTorch tensors differentiated by autograd (any device).
torch::Tensor INDUCT_SDK_API causal_conv1d_reference(const torch::Tensor& x,
                                                     const torch::Tensor& weight,
                                                     const torch::Tensor& bias, bool silu);

}  // namespace induct::nn
