#include "induct/nn/lstm.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "gemm.hpp"
#include "recurrent.hpp"
#include "simd_math.hpp"

namespace induct::nn {

namespace {

using simd::sigmoid_approx;
using simd::tanh_approx;

// All buffers are batch-major ([B, T, ...], as the layer's input and output), so a step's rows
// are strided: row b of step t's gates is at g + b * ld_g, of its states at ... + b * ld.
// c_prev has its own stride: at t = 0 it is one zero row read with stride 0.

// One step forward. g: pre-activations in, activations out (row stride ld_g); c_prev (stride
// ld_cp); c, tc (tanh c), h: row stride ld.
INDUCT_SIMD_CLONES
void gates_forward(int64_t batch, int64_t H, float* g, int64_t ld_g, const float* c_prev,
                   int64_t ld_cp, float* c, float* tc, float* h, int64_t ld) {
  for (int64_t b = 0; b < batch; ++b) {
    float* gi = g + b * ld_g;
    float* gf = gi + H;
    float* gg = gi + 2 * H;
    float* go = gi + 3 * H;
    const float* cp = c_prev + b * ld_cp;
    float* cb = c + b * ld;
    float* tb = tc + b * ld;
    float* hb = h + b * ld;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float i = sigmoid_approx(gi[j]), f = sigmoid_approx(gf[j]);
      const float v = tanh_approx(gg[j]), o = sigmoid_approx(go[j]);
      gi[j] = i;
      gf[j] = f;
      gg[j] = v;
      go[j] = o;
      const float cv = f * cp[j] + i * v;
      const float t = tanh_approx(cv);
      cb[j] = cv;
      tb[j] = t;
      hb[j] = o * t;
    }
  }
}

// One step backward. a: the step's activations (stride ld_g); tc (stride ld), c_prev (ld_cp);
// the gradient of h is dh_out (the layer's output, stride ld) plus dh_rec (through W_hh from
// step t + 1, [B, H]); dc: of c in, of c_prev out ([B, H]); dg: of the pre-activations, out
// (stride ld_g).
INDUCT_SIMD_CLONES
void gates_backward(int64_t batch, int64_t H, const float* a, int64_t ld_g, const float* tc,
                    const float* c_prev, int64_t ld_cp, const float* dh_out, int64_t ld,
                    const float* dh_rec, float* dc, float* dg) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* ai = a + b * ld_g;
    const float* af = ai + H;
    const float* ag = ai + 2 * H;
    const float* ao = ai + 3 * H;
    float* di = dg + b * ld_g;
    float* df = di + H;
    float* dgg = di + 2 * H;
    float* dout = di + 3 * H;
    const float* tb = tc + b * ld;
    const float* cp = c_prev + b * ld_cp;
    const float* dhb = dh_out + b * ld;
    const float* drb = dh_rec + b * H;
    float* dcb = dc + b * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float i = ai[j], f = af[j], v = ag[j], o = ao[j], t = tb[j];
      const float dh = dhb[j] + drb[j];
      const float d = dcb[j] + dh * o * (1.0f - t * t);
      di[j] = d * v * i * (1.0f - i);
      df[j] = d * cp[j] * f * (1.0f - f);
      dgg[j] = d * i * (1.0f - v * v);
      dout[j] = dh * t * o * (1.0f - o);
      dcb[j] = d * f;
    }
  }
}

class FusedLstm : public torch::autograd::Function<FusedLstm> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, const torch::Tensor& w_ih,
                                                const torch::Tensor& w_hh,
                                                const torch::Tensor& b_ih,
                                                const torch::Tensor& b_hh) {
    const int64_t B = x.size(0), T = x.size(1), I = x.size(2), H = w_hh.size(1);
    const auto opts = x.options();
    auto xc = x.contiguous();  // [B, T, I]
    // All input projections at once, both biases folded in; each step t > 0 adds
    // h_{t-1} W_hh^T (h_{-1} = 0). (Matrix products on the SDK's sgemm, as in linear.cpp.)
    auto acts = at::empty({B, T, 4 * H}, opts);
    bias_rows(B * T, 4 * H, (b_ih + b_hh).contiguous().data_ptr<float>(), acts.data_ptr<float>());
    sgemm(false, true, B * T, 4 * H, I, 1, xc.data_ptr<float>(), I, w_ih.data_ptr<float>(), I, 1,
          acts.data_ptr<float>(), 4 * H);
    auto hs = at::empty({B, T, H}, opts);  // the output
    auto cs = at::empty({B, T, H}, opts);
    auto tcs = at::empty({B, T, H}, opts);
    auto zero = at::zeros({H}, opts);  // c_{-1}
    float* g = acts.data_ptr<float>();
    const float* whh = w_hh.data_ptr<float>();
    float* c = cs.data_ptr<float>();
    float* tc = tcs.data_ptr<float>();
    float* h = hs.data_ptr<float>();
    const int64_t ld = T * H, ld_g = T * 4 * H;
    for (int64_t t = 0; t < T; ++t) {
      float* gt = g + t * 4 * H;
      if (t > 0) sgemm(false, true, B, 4 * H, H, 1, h + (t - 1) * H, ld, whh, H, 1, gt, ld_g);
      gates_forward(B, H, gt, ld_g, t > 0 ? c + (t - 1) * H : zero.data_ptr<float>(),
                    t > 0 ? ld : 0, c + t * H, tc + t * H, h + t * H, ld);
    }
    ctx->save_for_backward({w_ih, w_hh, hs});  // hs is the output: saved without a cycle
    ctx->saved_data["x"] = xc;
    ctx->saved_data["acts"] = acts;
    ctx->saved_data["cs"] = cs;
    ctx->saved_data["tcs"] = tcs;
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
    const auto cs = ctx->saved_data["cs"].toTensor();
    const auto tcs = ctx->saved_data["tcs"].toTensor();
    const int64_t B = acts.size(0), T = acts.size(1), H = w_hh.size(1);
    const auto opts = acts.options();

    auto dh_out = grads[0].contiguous();  // [B, T, H]
    auto dgates = at::empty({B, T, 4 * H}, opts);
    auto dc = at::zeros({B, H}, opts);
    auto dh_rec = at::zeros({B, H}, opts);  // from step t + 1 through W_hh
    auto zero = at::zeros({H}, opts);
    float* dg = dgates.data_ptr<float>();
    const float* a = acts.data_ptr<float>();
    const float* tc = tcs.data_ptr<float>();
    const float* c = cs.data_ptr<float>();
    const float* dho = dh_out.data_ptr<float>();
    const int64_t ld = T * H, ld_g = T * 4 * H;
    for (int64_t t = T - 1; t >= 0; --t) {
      gates_backward(B, H, a + t * 4 * H, ld_g, tc + t * H,
                     t > 0 ? c + (t - 1) * H : zero.data_ptr<float>(), t > 0 ? ld : 0, dho + t * H,
                     ld, dh_rec.data_ptr<float>(), dc.data_ptr<float>(), dg + t * 4 * H);
      if (t > 0)
        sgemm(false, false, B, H, 4 * H, 1, dg + t * 4 * H, ld_g, w_hh.data_ptr<float>(), H, 0,
              dh_rec.data_ptr<float>(), H);
    }
    // Both biases get the gates' gradient; W_hh's is the same gates' against h_{t-1}.
    auto input = input_projection_gradients(B * T, 4 * H, dg, x, w_ih);
    auto dw_hh = recurrent_weight_gradient(B, T, 4 * H, dg, hs);
    return {input.dx, input.dw_ih, dw_hh, input.db, input.db.clone()};
  }
};

}  // namespace

torch::Tensor lstm_layer(const torch::Tensor& x, const torch::Tensor& w_ih,
                         const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                         const torch::Tensor& b_hh) {
  TORCH_CHECK(x.dim() == 3, "lstm_layer: x must be [B, T, I]");
  const int64_t H = w_hh.size(1);
  TORCH_CHECK(w_ih.size(0) == 4 * H && w_hh.size(0) == 4 * H && w_ih.size(1) == x.size(2),
              "lstm_layer: weight shapes do not match");
  if (x.device().is_cpu() && x.scalar_type() == at::kFloat && w_ih.scalar_type() == at::kFloat)
    return FusedLstm::apply(x, w_ih.contiguous(), w_hh.contiguous(), b_ih, b_hh)[0];
  auto h0 = at::zeros({1, x.size(0), H}, x.options());
  return std::get<0>(at::lstm(x, {h0, h0}, {w_ih, w_hh, b_ih, b_hh}, /*has_biases=*/true,
                              /*num_layers=*/1, /*dropout=*/0, /*train=*/true,
                              /*bidirectional=*/false, /*batch_first=*/true));
}

}  // namespace induct::nn
