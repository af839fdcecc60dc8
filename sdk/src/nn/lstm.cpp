#include "induct/nn/lstm.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "gemm.hpp"
#include "simd_math.hpp"

namespace induct::nn {

namespace {

using simd::sigmoid_approx;
using simd::tanh_approx;

// One step forward. g: [B, 4H] pre-activations in, activations out; c_prev, c, tc (tanh c),
// h: [B, H].
INDUCT_SIMD_CLONES
void gates_forward(int64_t batch, int64_t H, float* g, const float* c_prev, float* c, float* tc,
                   float* h) {
  for (int64_t b = 0; b < batch; ++b) {
    float* gi = g + b * 4 * H;
    float* gf = gi + H;
    float* gg = gi + 2 * H;
    float* go = gi + 3 * H;
    const float* cp = c_prev + b * H;
    float* cb = c + b * H;
    float* tb = tc + b * H;
    float* hb = h + b * H;
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

// One step backward. a: [B, 4H] activations of the step; tc, c_prev: [B, H]; dh: the gradient
// of h (output plus recurrent), dc: of c, in; of c_prev, out; dg: [B, 4H] the gradient of the
// pre-activations, out.
INDUCT_SIMD_CLONES
void gates_backward(int64_t batch, int64_t H, const float* a, const float* tc, const float* c_prev,
                    const float* dh, float* dc, float* dg) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* ai = a + b * 4 * H;
    const float* af = ai + H;
    const float* ag = ai + 2 * H;
    const float* ao = ai + 3 * H;
    float* di = dg + b * 4 * H;
    float* df = di + H;
    float* dgg = di + 2 * H;
    float* dout = di + 3 * H;
    const float* tb = tc + b * H;
    const float* cp = c_prev + b * H;
    const float* dhb = dh + b * H;
    float* dcb = dc + b * H;
#pragma omp simd
    for (int64_t j = 0; j < H; ++j) {
      const float i = ai[j], f = af[j], v = ag[j], o = ao[j], t = tb[j];
      const float d = dcb[j] + dhb[j] * o * (1.0f - t * t);
      di[j] = d * v * i * (1.0f - i);
      df[j] = d * cp[j] * f * (1.0f - f);
      dgg[j] = d * i * (1.0f - v * v);
      dout[j] = dhb[j] * t * o * (1.0f - o);
      dcb[j] = d * f;
    }
  }
}

class FusedLstm : public torch::autograd::Function<FusedLstm> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& x, const torch::Tensor& w_ih,
                                                const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                                                const torch::Tensor& b_hh) {
    const int64_t B = x.size(0), T = x.size(1), I = x.size(2), H = w_hh.size(1);
    auto xt = x.transpose(0, 1).contiguous();  // [T, B, I]: each step's rows are contiguous
    // All input projections at once, both biases folded in; each step adds h_{t-1} W_hh^T.
    // (Matrix products on the SDK's sgemm, as in linear.cpp.)
    auto acts = at::empty({T, B, 4 * H}, x.options());
    bias_rows(T * B, 4 * H, (b_ih + b_hh).contiguous().data_ptr<float>(), acts.data_ptr<float>());
    sgemm(false, true, T * B, 4 * H, I, 1, xt.data_ptr<float>(), I, w_ih.data_ptr<float>(), I, 1,
          acts.data_ptr<float>(), 4 * H);
    auto hs = at::empty({T + 1, B, H}, x.options());  // hs[t]: h_{t-1}, hs[0] = 0
    auto cs = at::empty({T + 1, B, H}, x.options());
    auto tcs = at::empty({T, B, H}, x.options());
    hs[0].zero_();
    cs[0].zero_();
    float* g = acts.data_ptr<float>();
    const float* whh = w_hh.data_ptr<float>();
    float* c = cs.data_ptr<float>();
    float* tc = tcs.data_ptr<float>();
    float* h = hs.data_ptr<float>();
    const int64_t stride = B * H;
    for (int64_t t = 0; t < T; ++t) {
      float* gt = g + t * 4 * stride;
      sgemm(false, true, B, 4 * H, H, 1, h + t * stride, H, whh, H, 1, gt, 4 * H);
      gates_forward(B, H, gt, c + t * stride, c + (t + 1) * stride,
                    tc + t * stride, h + (t + 1) * stride);
    }
    ctx->save_for_backward({w_ih, w_hh});
    ctx->saved_data["xt"] = xt;
    ctx->saved_data["acts"] = acts;
    ctx->saved_data["hs"] = hs;
    ctx->saved_data["cs"] = cs;
    ctx->saved_data["tcs"] = tcs;
    return {hs.slice(0, 1).transpose(0, 1).contiguous()};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& w_ih = saved[0];
    const auto& w_hh = saved[1];
    const auto xt = ctx->saved_data["xt"].toTensor();
    const auto acts = ctx->saved_data["acts"].toTensor();
    const auto hs = ctx->saved_data["hs"].toTensor();
    const auto cs = ctx->saved_data["cs"].toTensor();
    const auto tcs = ctx->saved_data["tcs"].toTensor();
    const int64_t T = acts.size(0), B = acts.size(1), H = w_hh.size(1), I = xt.size(2);

    auto dh_out = grads[0].transpose(0, 1).contiguous();  // [T, B, H]
    auto dgates = at::empty({T, B, 4 * H}, acts.options());
    auto dh = at::empty({B, H}, acts.options());
    auto dc = at::zeros({B, H}, acts.options());
    auto dh_next = at::zeros({B, H}, acts.options());  // from step t + 1 through W_hh
    const auto dh_steps = dh_out.unbind(0);
    float* dg = dgates.data_ptr<float>();
    const float* a = acts.data_ptr<float>();
    const float* tc = tcs.data_ptr<float>();
    const float* c = cs.data_ptr<float>();
    const int64_t stride = B * H;
    for (int64_t t = T - 1; t >= 0; --t) {
      at::add_out(dh, dh_steps[t], dh_next);
      gates_backward(B, H, a + t * 4 * stride, tc + t * stride, c + t * stride, dh.data_ptr<float>(),
                     dc.data_ptr<float>(), dg + t * 4 * stride);
      if (t > 0)
        sgemm(false, false, B, H, 4 * H, 1, dg + t * 4 * stride, 4 * H, w_hh.data_ptr<float>(), H, 0,
              dh_next.data_ptr<float>(), H);
    }
    auto dw_hh = at::empty({4 * H, H}, acts.options());
    sgemm(true, false, 4 * H, H, T * B, 1, dg, 4 * H, hs.data_ptr<float>(), H, 0,
          dw_hh.data_ptr<float>(), H);  // hs[0 .. T - 1]: h_{t-1} of each step
    auto dw_ih = at::empty({4 * H, I}, acts.options());
    sgemm(true, false, 4 * H, I, T * B, 1, dg, 4 * H, xt.data_ptr<float>(), I, 0,
          dw_ih.data_ptr<float>(), I);
    auto db = at::empty({4 * H}, acts.options());
    column_sums(T * B, 4 * H, dg, db.data_ptr<float>());
    auto dx = at::empty({T, B, I}, acts.options());
    sgemm(false, false, T * B, I, 4 * H, 1, dg, 4 * H, w_ih.data_ptr<float>(), I, 0,
          dx.data_ptr<float>(), I);
    dx = dx.transpose(0, 1);
    return {dx, dw_ih, dw_hh, db, db.clone()};
  }
};

}  // namespace

torch::Tensor lstm_layer(const torch::Tensor& x, const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                         const torch::Tensor& b_ih, const torch::Tensor& b_hh) {
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
