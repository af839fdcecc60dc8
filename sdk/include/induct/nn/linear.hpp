// Affine layers: y = x W^T + b.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// x [..., in], weight [out, in], bias [out] or undefined -> [..., out], as torch::linear. On the
// CPU in float32 one autograd node whose three matrix products (forward, and the gradients of x
// and of the weight) run on oneDNN's sgemm, which with the skinny products of small models
// (64 to 256 features, thousands of rows) is 15-35% faster here than the OpenBLAS that
// LibTorch calls (docs/performance.md); other devices and types call torch::linear.
torch::Tensor INDUCT_SDK_API linear(const torch::Tensor& x, const torch::Tensor& weight,
                                    const torch::Tensor& bias = {});

// GELU(x W^T + b), exact (erf, as torch::gelu) or the tanh approximation: on the CPU in float32
// the same node as linear's, with the bias and GELU in one pass after the product and, in
// backward, GELU's derivative and the bias gradient in one pass before the products (a
// transformer MLP's first layer); elsewhere LibTorch's operations.
torch::Tensor INDUCT_SDK_API linear_gelu(const torch::Tensor& x, const torch::Tensor& weight,
                                         const torch::Tensor& bias, bool exact);

}  // namespace induct::nn
