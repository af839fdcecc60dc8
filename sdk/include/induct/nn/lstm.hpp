// One LSTM layer over a whole sequence (Hochreiter and Schmidhuber 1997), as torch::nn::LSTM
// computes it: gates i, f, g, o in that order, zero initial state.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

//   x: [B, T, I]   w_ih: [4H, I]   w_hh: [4H, H]   b_ih, b_hh: [4H]   ->  h: [B, T, H]
// On the CPU in float32 one autograd node with its own backward: the input projection of all
// steps is one GEMM, each step one GEMM (the recurrent product) and one fused pass over the
// gates (vectorised sigmoid and tanh), and backward mirrors it, with the weight gradients of
// all steps as one GEMM each. Elsewhere (CUDA, other types) LibTorch's lstm. Agrees with
// torch::nn::LSTM to float32 rounding (tests/unit/test_nn.cpp).
torch::Tensor INDUCT_SDK_API lstm_layer(const torch::Tensor& x, const torch::Tensor& w_ih,
                                        const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                                        const torch::Tensor& b_hh);

}  // namespace induct::nn
