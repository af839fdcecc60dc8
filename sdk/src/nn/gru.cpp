#include "induct/nn/gru.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "gemm.hpp"
#include "recurrent.hpp"
#include "simd_math.hpp"

namespace induct::nn {

namespace {

using simd::sigmoid_approx;
using simd::tanh_approx;

// Buffers are batch-major ([B, T, ...]) as in lstm.cpp: row b of step t's gates is at
// g + b * ld_g, of its states at ... + b * ld; h_prev has its own stride (0 at t = 0: one zero
// row).

// One step forward. g: the input projections (r, z, n) in, the activations r, z, n out (row
// stride ld_g); gh: the recurrent projections W_hh h_{t-1} + b_hh ([B, 3H]); hn: W_hn h + b_hn
// out and h out (stride ld).
INDUCT_SIMD_CLONES
void gates_forward(int64_t batch, int64_t H, float* g, int64_t ld_g, const float* gh,
                   const float* h_prev, int64_t ld_hp, float* hn, float* h, int64_t ld) {
  for (int64_t b = 0; b < batch; ++b) {
    float* gr = g + b * ld_g;
    float* gz = gr + H;
    float* gn = gr + 2 * H;
    const float* hr = gh + b * 3 * H;
    const float* hz = hr + H;
    const float* hnb = hr + 2 * H;
    const float* hp = h_prev + b * ld_hp;
    float* hn_out = hn + b * ld;
    float* hb = h + b * ld;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float r = sigmoid_approx(gr[j] + hr[j]), z = sigmoid_approx(gz[j] + hz[j]);
      const float n = tanh_approx(gn[j] + r * hnb[j]);
      gr[j] = r;
      gz[j] = z;
      gn[j] = n;
      hn_out[j] = hnb[j];
      hb[j] = (1.0f - z) * n + z * hp[j];
    }
  }
}

// One step backward. a: the step's activations r, z, n (stride ld_g); hn (stride ld); h_prev
// (ld_hp); the gradient of h is dh_out (the layer's output, stride ld) plus dh_rec (from step
// t + 1, [B, H]), and dh_rec is replaced by the direct part of h_{t-1}'s gradient, dh z (the
// product with W_hh adds the rest). dgi, dgh: of the input and recurrent projections, out
// (stride ld_g).
INDUCT_SIMD_CLONES
void gates_backward(int64_t batch, int64_t H, const float* a, int64_t ld_g, const float* hn,
                    const float* h_prev, int64_t ld_hp, const float* dh_out, int64_t ld,
                    float* dh_rec, float* dgi, float* dgh) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* ar = a + b * ld_g;
    const float* az = ar + H;
    const float* an = ar + 2 * H;
    const float* hnb = hn + b * ld;
    const float* hp = h_prev + b * ld_hp;
    const float* dho = dh_out + b * ld;
    float* drb = dh_rec + b * H;
    float* ir = dgi + b * ld_g;
    float* iz = ir + H;
    float* in = ir + 2 * H;
    float* rr = dgh + b * ld_g;
    float* rz = rr + H;
    float* rn = rr + 2 * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float r = ar[j], z = az[j], n = an[j];
      const float dh = dho[j] + drb[j];
      const float dn = dh * (1.0f - z) * (1.0f - n * n);
      const float dr = dn * hnb[j] * r * (1.0f - r);
      const float dz = dh * (hp[j] - n) * z * (1.0f - z);
      ir[j] = dr;
      iz[j] = dz;
      in[j] = dn;
      rr[j] = dr;
      rz[j] = dz;
      rn[j] = dn * r;
      drb[j] = dh * z;
    }
  }
}

class FusedGru : public torch::autograd::Function<FusedGru> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, const torch::Tensor& w_ih,
                                                const torch::Tensor& w_hh,
                                                const torch::Tensor& b_ih,
                                                const torch::Tensor& b_hh) {
    const int64_t B = x.size(0), T = x.size(1), I = x.size(2), H = w_hh.size(1);
    const auto opts = x.options();
    auto xc = x.contiguous();  // [B, T, I]
    // All input projections at once with b_ih; each step's recurrent projection apart (r
    // multiplies its n part), b_hh folded in.
    auto acts = at::empty({B, T, 3 * H}, opts);
    bias_rows(B * T, 3 * H, b_ih.contiguous().data_ptr<float>(), acts.data_ptr<float>());
    sgemm(false, true, B * T, 3 * H, I, 1, xc.data_ptr<float>(), I, w_ih.data_ptr<float>(), I, 1,
          acts.data_ptr<float>(), 3 * H);
    auto hs = at::empty({B, T, H}, opts);  // the output
    auto hns = at::empty({B, T, H}, opts);
    auto gh = at::empty({B, 3 * H}, opts);
    auto zero = at::zeros({H}, opts);  // h_{-1}
    const auto bhh = b_hh.contiguous();
    float* g = acts.data_ptr<float>();
    const float* whh = w_hh.data_ptr<float>();
    float* h = hs.data_ptr<float>();
    float* hn = hns.data_ptr<float>();
    const int64_t ld = T * H, ld_g = T * 3 * H;
    for (int64_t t = 0; t < T; ++t) {
      bias_rows(B, 3 * H, bhh.data_ptr<float>(), gh.data_ptr<float>());
      if (t > 0)
        sgemm(false, true, B, 3 * H, H, 1, h + (t - 1) * H, ld, whh, H, 1, gh.data_ptr<float>(),
              3 * H);
      gates_forward(B, H, g + t * 3 * H, ld_g, gh.data_ptr<float>(),
                    t > 0 ? h + (t - 1) * H : zero.data_ptr<float>(), t > 0 ? ld : 0, hn + t * H,
                    h + t * H, ld);
    }
    ctx->save_for_backward({w_ih, w_hh, hs});  // hs is the output: saved without a cycle
    ctx->saved_data["x"] = xc;
    ctx->saved_data["acts"] = acts;
    ctx->saved_data["hns"] = hns;
    return {hs};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& w_ih = saved[0];
    const auto& w_hh = saved[1];
    const auto& hs = saved[2];
    const auto x = ctx->saved_data["x"].toTensor();
    const auto acts = ctx->saved_data["acts"].toTensor();
    const auto hns = ctx->saved_data["hns"].toTensor();
    const int64_t B = acts.size(0), T = acts.size(1), H = w_hh.size(1);
    const auto opts = acts.options();

    auto dh_out = grads[0].contiguous();  // [B, T, H]
    auto dgi = at::empty({B, T, 3 * H}, opts);
    auto dgh = at::empty({B, T, 3 * H}, opts);
    auto dh_rec = at::zeros({B, H}, opts);  // from step t + 1
    auto zero = at::zeros({H}, opts);
    const float* a = acts.data_ptr<float>();
    const float* hn = hns.data_ptr<float>();
    const float* h = hs.data_ptr<float>();
    const float* dho = dh_out.data_ptr<float>();
    float* di = dgi.data_ptr<float>();
    float* dr = dgh.data_ptr<float>();
    const int64_t ld = T * H, ld_g = T * 3 * H;
    for (int64_t t = T - 1; t >= 0; --t) {
      gates_backward(B, H, a + t * 3 * H, ld_g, hn + t * H,
                     t > 0 ? h + (t - 1) * H : zero.data_ptr<float>(), t > 0 ? ld : 0, dho + t * H,
                     ld, dh_rec.data_ptr<float>(), di + t * 3 * H, dr + t * 3 * H);
      if (t > 0)
        sgemm(false, false, B, H, 3 * H, 1, dr + t * 3 * H, ld_g, w_hh.data_ptr<float>(), H, 1,
              dh_rec.data_ptr<float>(), H);
    }
    auto input = input_projection_gradients(B * T, 3 * H, di, x, w_ih);
    auto db_hh = at::empty({3 * H}, opts);  // every step, t = 0 too (its projection is b_hh)
    column_sums(B * T, 3 * H, dr, db_hh.data_ptr<float>());
    auto dw_hh = recurrent_weight_gradient(B, T, 3 * H, dr, hs);
    return {input.dx, input.dw_ih, dw_hh, input.db, db_hh};
  }
};

}  // namespace

torch::Tensor gru_layer(const torch::Tensor& x, const torch::Tensor& w_ih,
                        const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                        const torch::Tensor& b_hh) {
  TORCH_CHECK(x.dim() == 3, "gru_layer: x must be [B, T, I]");
  const int64_t H = w_hh.size(1);
  TORCH_CHECK(w_ih.size(0) == 3 * H && w_hh.size(0) == 3 * H && w_ih.size(1) == x.size(2) &&
                  b_ih.numel() == 3 * H && b_hh.numel() == 3 * H,
              "gru_layer: weight shapes do not match");
  if (x.device().is_cpu() && x.scalar_type() == at::kFloat && w_ih.scalar_type() == at::kFloat)
    return FusedGru::apply(x, w_ih.contiguous(), w_hh.contiguous(), b_ih, b_hh)[0];
  auto h0 = at::zeros({1, x.size(0), H}, x.options());
  return std::get<0>(at::gru(x, h0, {w_ih, w_hh, b_ih, b_hh}, /*has_biases=*/true,
                             /*num_layers=*/1, /*dropout=*/0, /*train=*/true,
                             /*bidirectional=*/false, /*batch_first=*/true));
}

}  // namespace induct::nn
