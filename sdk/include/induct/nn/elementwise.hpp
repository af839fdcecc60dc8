// Elementwise and per-row layers with fused CPU kernels: GELU (exact and tanh approximation),
// the SwiGLU product, LayerNorm, RMSNorm and dropout.
#pragma once

#include <torch/types.h>

#include <utility>

#include "induct/export.hpp"

namespace induct::nn {

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as torch::gelu(x, "tanh"). On the CPU in
// float32 one vectorised pass forward and one backward (LibTorch 1.13's took about 4.5 ns per
// element); elsewhere torch::gelu.
torch::Tensor INDUCT_SDK_API gelu_tanh(const torch::Tensor& x);
// x Phi(x) (exact, erf), as torch::gelu(x); fused on the CPU in float32 in the same way.
torch::Tensor INDUCT_SDK_API gelu(const torch::Tensor& x);

// silu(gate) * up (the SwiGLU product); fused on the CPU in float32, forward and backward.
torch::Tensor INDUCT_SDK_API swiglu(const torch::Tensor& gate, const torch::Tensor& up);

// x / sqrt(mean(x^2 over the last dimension) + eps) * weight; fused on the CPU in float32 (one
// pass per row each way), elsewhere LibTorch operations.
torch::Tensor INDUCT_SDK_API rms_norm(const torch::Tensor& x, const torch::Tensor& weight,
                                      double eps);

// LayerNorm over the last dimension, as torch::layer_norm(x, {n}, weight, bias, eps): weight [n]
// and bias [n] or undefined (none). Fused on the CPU in float32 (one pass per row each way;
// LibTorch 1.13's kernels were about 6% of a small Pythia step), elsewhere, or without a
// weight, LibTorch's.
torch::Tensor INDUCT_SDK_API layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                                        const torch::Tensor& bias, double eps);

// A LayerNorm per head: each of `heads` equal parts of the last dimension normalised on its
// own, weight [n] and bias [n] or undefined over the whole last dimension (xLSTM's multi-head
// LayerNorm; torch::group_norm over rows computes the same). Fused as layer_norm.
torch::Tensor INDUCT_SDK_API head_norm(const torch::Tensor& x, int64_t heads,
                                       const torch::Tensor& weight, const torch::Tensor& bias,
                                       double eps);

// Two LayerNorms of the same x (GPT-NeoX's parallel residual): {layer_norm(x, weight, bias),
// layer_norm(x, weight2, bias2)}. Fused on the CPU in float32: the row statistics once, and one
// backward pass whose gradient of x is that of both (no separate sum of two gradients).
std::pair<torch::Tensor, torch::Tensor> INDUCT_SDK_API
layer_norm_pair(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                const torch::Tensor& weight2, const torch::Tensor& bias2, double eps);

// Inverted dropout: when training, each element is zeroed with probability p and the others
// scaled by 1 / (1 - p). On the CPU the mask is a counter-based hash of the element's index
// and one 64-bit draw from LibTorch's generator (so torch::manual_seed fixes it, as it fixes
// LibTorch's dropout, but the masks differ from LibTorch's), recomputed in backward instead of
// stored; LibTorch's Bernoulli sampler took about 2 ns per element. Elsewhere torch::dropout.
torch::Tensor INDUCT_SDK_API dropout(const torch::Tensor& x, double p, bool training);

// The keep-mask of that dropout for `count` elements from `seed`, scaled by 1 / (1 - p)
// (0 where dropped): for kernels that fuse dropout (causal_attention).
void INDUCT_SDK_API dropout_mask(uint64_t seed, double p, int64_t count, float* out);
// One 64-bit draw from LibTorch's default CPU generator.
uint64_t INDUCT_SDK_API draw_seed();

}  // namespace induct::nn
