// What the fused recurrent layers (lstm.cpp, gru.cpp) share after their backward time loops:
// the gradients of all steps' weights, biases and inputs, one matrix product each. Internal:
// not installed. Buffers are batch-major [B, T, ...] as in those layers.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>

#include "gemm.hpp"

namespace induct::nn {

struct InputProjectionGradients {
  at::Tensor dx, dw_ih, db;
};

// Of the input projection x W_ih^T + b of every step: dg [rows = B T, G] the gradient of the
// projection (G = gates x H), x [B, T, I], w_ih [G, I].
inline InputProjectionGradients input_projection_gradients(int64_t rows, int64_t G, const float* dg,
                                                           const at::Tensor& x,
                                                           const at::Tensor& w_ih) {
  const int64_t I = x.size(-1);
  InputProjectionGradients out;
  out.dw_ih = at::empty({G, I}, x.options());
  sgemm(true, false, G, I, rows, 1, dg, G, x.data_ptr<float>(), I, 0, out.dw_ih.data_ptr<float>(),
        I);
  out.db = at::empty({G}, x.options());
  column_sums(rows, G, dg, out.db.data_ptr<float>());
  out.dx = at::empty(x.sizes(), x.options());
  sgemm(false, false, rows, I, G, 1, dg, G, w_ih.data_ptr<float>(), I, 0, out.dx.data_ptr<float>(),
        I);
  return out;
}

// dW_hh = sum over steps t > 0 of dg_t^T h_{t-1}, for dg [B, T, G] the gradient of the
// recurrent projection and hs [B, T, H] the states: one product over the row pairs (dg row
// r + 1, hs row r), r = b T + t - 1, once dg's rows of t = 0 (whose pair would be the previous
// sequence's last state) are zeroed. Overwrites those rows: dg is not needed after this.
inline at::Tensor recurrent_weight_gradient(int64_t B, int64_t T, int64_t G, float* dg,
                                            const at::Tensor& hs) {
  const int64_t H = hs.size(-1);
  auto dw_hh = at::zeros({G, H}, hs.options());
  for (int64_t b = 0; b < B; ++b) std::fill_n(dg + b * T * G, G, 0.0f);
  if (B * T > 1)
    sgemm(true, false, G, H, B * T - 1, 1, dg + G, G, hs.data_ptr<float>(), H, 0,
          dw_hh.data_ptr<float>(), H);
  return dw_hh;
}

}  // namespace induct::nn
