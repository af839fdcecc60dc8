// One GRU layer over a whole sequence (Cho et al. 2014), as torch::nn::GRU computes it: gates
// r, z, n in that order, n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) n + z h,
// zero initial state.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

//   x: [B, T, I]   w_ih: [3H, I]   w_hh: [3H, H]   b_ih, b_hh: [3H]   ->  h: [B, T, H]
// On the CPU in float32 one autograd node with its own backward, as lstm_layer: the input
// projections of all steps as one GEMM, each step one GEMM (the recurrent product) and one
// vectorised pass over the gates, a backward that mirrors it with the weight gradients of all
// steps as one GEMM each. Elsewhere (CUDA, other types) LibTorch's gru. Agrees with
// torch::nn::GRU to float32 rounding (tests/unit/test_nn.cpp).
torch::Tensor INDUCT_SDK_API gru_layer(const torch::Tensor& x, const torch::Tensor& w_ih,
                                       const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                                       const torch::Tensor& b_hh);

}  // namespace induct::nn
