#include "induct/nn/slstm.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <vector>

#include "gemm.hpp"
#include "simd_math.hpp"

namespace induct::nn {

torch::Tensor slstm_recurrence_reference(const torch::Tensor& pre_input,
                                         const torch::Tensor& recurrent,
                                         const torch::Tensor& bias) {
  const auto pre = bias.defined() ? pre_input + bias : pre_input;
  const int64_t B = pre.size(0), T = pre.size(1), H = pre.size(3), D = pre.size(4), d = H * D;
  auto y = torch::zeros({B, d}, pre.options());
  torch::Tensor c = y, n = y, m = y;
  std::vector<torch::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    // The recurrent part, per gate and head: [B, 4, H, D].
    const auto r = torch::einsum("bhi,ghoi->bgho", {y.reshape({B, H, D}), recurrent});
    const auto raw = (pre.select(1, t) + r).reshape({B, 4, d});
    const auto i_raw = raw.select(1, 0), f_raw = raw.select(1, 1), z_raw = raw.select(1, 2),
               o_raw = raw.select(1, 3);
    const auto log_f_plus_m = m + torch::log_sigmoid(f_raw);
    const auto m_new = t == 0 ? i_raw : torch::maximum(i_raw, log_f_plus_m);
    const auto i = torch::clamp_max(torch::exp(i_raw - m_new), 1.0);
    const auto f = torch::clamp_max(torch::exp(log_f_plus_m - m_new), 1.0);
    c = f * c + i * torch::tanh(z_raw);
    n = f * n + i;
    y = torch::sigmoid(o_raw) * c / n;
    m = m_new;
    outputs.push_back(y);
  }
  return torch::stack(outputs, 1);
}

namespace {

using simd::exp_approx;
using simd::sigmoid_approx;
using simd::softplus_approx;
using simd::tanh_approx;

// Buffers are batch-major: a step's gates [B, H, 4, D] are rows of stride ld_a = T 4 H D in
// acts, its states rows of stride ld = T H D. One step forward for one row (all heads):
// a: pre-activations in, activations (i, f, tanh z, sigmoid o) out; sf: sigmoid(f~); c, n:
// the new states; cp, np: the previous ones (null at t = 0); m: the stabilizer, updated.
INDUCT_SIMD_CLONES
void gates_forward(int64_t H, int64_t D, float* a, float* sf, const float* cp, const float* np,
                   float* c, float* n, float* h, float* m) {
  for (int64_t k = 0; k < H; ++k) {
    float* ai = a + k * 4 * D;
    float* af = ai + D;
    float* az = ai + 2 * D;
    float* ao = ai + 3 * D;
    float* sfk = sf + k * D;
    float* ck = c + k * D;
    float* nk = n + k * D;
    float* hk = h + k * D;
    float* mk = m + k * D;
    if (cp == nullptr) {
#pragma omp simd
      for (int64_t j = 0; j < D; ++j) {  // m_0 = i~: i = 1, and f meets zero states
        const float tz = tanh_approx(az[j]), so = sigmoid_approx(ao[j]);
        sfk[j] = sigmoid_approx(af[j]);
        mk[j] = ai[j];
        ai[j] = 1.0f;
        af[j] = 0.0f;
        az[j] = tz;
        ao[j] = so;
        ck[j] = tz;
        nk[j] = 1.0f;
        hk[j] = so * tz;
      }
      continue;
    }
    const float* cpk = cp + k * D;
    const float* npk = np + k * D;
#pragma omp simd
    for (int64_t j = 0; j < D; ++j) {
      const float lf = mk[j] - softplus_approx(-af[j]);  // log sigmoid(f~) + m_{t-1}
      const float mn = ai[j] > lf ? ai[j] : lf;
      const float i = exp_approx(ai[j] - mn), f = exp_approx(lf - mn);
      const float tz = tanh_approx(az[j]), so = sigmoid_approx(ao[j]);
      sfk[j] = sigmoid_approx(af[j]);
      mk[j] = mn;
      ai[j] = i;
      af[j] = f;
      az[j] = tz;
      ao[j] = so;
      const float cv = f * cpk[j] + i * tz, nv = f * npk[j] + i;
      ck[j] = cv;
      nk[j] = nv;
      hk[j] = so * cv / nv;
    }
  }
}

// One step backward for one row: a, sf, c, n as forward left them, cp and np the previous
// states (null at t = 0); the gradient of h is dh (the output's plus the recurrent one); dc,
// dn: of c and n in, of the previous ones out; dg: of the pre-activations, out.
INDUCT_SIMD_CLONES
void gates_backward(int64_t H, int64_t D, const float* a, const float* sf, const float* c,
                    const float* n, const float* cp, const float* np, const float* dh_out,
                    const float* dh_rec, float* dc, float* dn, float* dg) {
  for (int64_t k = 0; k < H; ++k) {
    const float* ai = a + k * 4 * D;
    const float* af = ai + D;
    const float* az = ai + 2 * D;
    const float* ao = ai + 3 * D;
    const float* sfk = sf + k * D;
    const float* ck = c + k * D;
    const float* nk = n + k * D;
    const float* dho = dh_out + k * D;
    const float* dhr = dh_rec + k * D;
    float* dck = dc + k * D;
    float* dnk = dn + k * D;
    float* di = dg + k * 4 * D;
    float* df = di + D;
    float* dz = di + 2 * D;
    float* dout = di + 3 * D;
    const float* cpk = cp ? cp + k * D : nullptr;
    const float* npk = np ? np + k * D : nullptr;
#pragma omp simd
    for (int64_t j = 0; j < D; ++j) {
      const float i = ai[j], f = af[j], tz = az[j], so = ao[j], cv = ck[j], nv = nk[j];
      const float dh = dho[j] + dhr[j];
      const float dct = dck[j] + dh * so / nv;
      const float dnt = dnk[j] - dh * so * cv / (nv * nv);
      dout[j] = dh * cv / nv * so * (1.0f - so);
      di[j] = (dct * tz + dnt) * i;
      dz[j] = dct * i * (1.0f - tz * tz);
      const float dfv = cpk ? dct * cpk[j] + dnt * npk[j] : 0.0f;
      df[j] = dfv * f * (1.0f - sfk[j]);
      dck[j] = dct * f;
      dnk[j] = dnt * f;
    }
  }
}

class FusedSlstm : public torch::autograd::Function<FusedSlstm> {
 public:
  // pre: [B, T, 4, H, D], any layout; weights: [H, 4 D, D] contiguous; bias: [4, H, D] or
  // empty.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& pre,
                                                const torch::Tensor& weights,
                                                const torch::Tensor& bias) {
    const int64_t B = pre.size(0), T = pre.size(1), H = pre.size(3), D = pre.size(4), d = H * D;
    const auto opts = pre.options();
    // The pre-activations in the kernel's layout, each head's four gates side by side
    // ([B, T, H, 4, D]), with the bias: one pass through pre's strides.
    auto acts = at::empty({B, T, H, 4, D}, opts);
    auto gate_major = acts.permute({0, 1, 3, 2, 4});  // [B, T, 4, H, D], a view of acts
    if (bias.numel() > 0)
      at::add_out(gate_major, pre, bias);
    else
      gate_major.copy_(pre);
    ctx->saved_data["bias"] = bias.numel() > 0;
    auto hs = at::empty({B, T, d}, opts);
    auto cs = at::empty({B, T, d}, opts);
    auto ns = at::empty({B, T, d}, opts);
    auto sfs = at::empty({B, T, d}, opts);
    auto ms = at::empty({B, d}, opts);
    float* a = acts.data_ptr<float>();
    const float* w = weights.data_ptr<float>();
    float* h = hs.data_ptr<float>();
    float* c = cs.data_ptr<float>();
    float* n = ns.data_ptr<float>();
    float* sf = sfs.data_ptr<float>();
    float* m = ms.data_ptr<float>();
    const int64_t ld = T * d, ld_a = T * 4 * d;
    for (int64_t t = 0; t < T; ++t) {
      if (t > 0)
        for (int64_t k = 0; k < H; ++k)
          sgemm(false, true, B, 4 * D, D, 1, h + (t - 1) * d + k * D, ld, w + k * 4 * D * D, D, 1,
                a + t * 4 * d + k * 4 * D, ld_a);
      for (int64_t b = 0; b < B; ++b) {
        const int64_t row = b * ld + t * d;
        gates_forward(H, D, a + b * ld_a + t * 4 * d, sf + row, t > 0 ? c + row - d : nullptr,
                      t > 0 ? n + row - d : nullptr, c + row, n + row, h + row, m + b * d);
      }
    }
    ctx->save_for_backward({weights, hs});  // hs is the output: saved without a cycle
    ctx->saved_data["acts"] = acts;
    ctx->saved_data["cs"] = cs;
    ctx->saved_data["ns"] = ns;
    ctx->saved_data["sfs"] = sfs;
    return {hs};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& weights = saved[0];
    const auto& hs = saved[1];
    const auto acts = ctx->saved_data["acts"].toTensor();
    const auto cs = ctx->saved_data["cs"].toTensor();
    const auto ns = ctx->saved_data["ns"].toTensor();
    const auto sfs = ctx->saved_data["sfs"].toTensor();
    const int64_t B = acts.size(0), T = acts.size(1), H = acts.size(2), D = acts.size(4), d = H * D;
    const auto opts = acts.options();
    auto dh_out = grads[0].contiguous();  // [B, T, d]
    auto dpre = at::empty(acts.sizes(), opts);
    auto dc = at::zeros({B, d}, opts), dn = at::zeros({B, d}, opts);
    auto dh_rec = at::zeros({B, d}, opts);  // from step t + 1 through the recurrent weights
    const float* a = acts.data_ptr<float>();
    const float* c = cs.data_ptr<float>();
    const float* n = ns.data_ptr<float>();
    const float* sf = sfs.data_ptr<float>();
    const float* dho = dh_out.data_ptr<float>();
    const float* w = weights.data_ptr<float>();
    float* dg = dpre.data_ptr<float>();
    float* dr = dh_rec.data_ptr<float>();
    const int64_t ld = T * d, ld_a = T * 4 * d;
    for (int64_t t = T - 1; t >= 0; --t) {
      for (int64_t b = 0; b < B; ++b) {
        const int64_t row = b * ld + t * d, row_a = b * ld_a + t * 4 * d;
        gates_backward(H, D, a + row_a, sf + row, c + row, n + row, t > 0 ? c + row - d : nullptr,
                       t > 0 ? n + row - d : nullptr, dho + row, dr + b * d,
                       dc.data_ptr<float>() + b * d, dn.data_ptr<float>() + b * d, dg + row_a);
      }
      if (t > 0)
        for (int64_t k = 0; k < H; ++k)
          sgemm(false, false, B, D, 4 * D, 1, dg + t * 4 * d + k * 4 * D, ld_a, w + k * 4 * D * D,
                D, 0, dr + k * D, d);
    }
    // The bias's gradient: dpre summed over batch and time, [H, 4, D] -> [4, H, D].
    const auto dbias = ctx->saved_data["bias"].toBool()
                           ? dpre.sum(at::IntArrayRef{0, 1}).permute({1, 0, 2})
                           : torch::Tensor();
    // Per head: dW = sum over t > 0 of dg_t^T h_{t-1}, one product over the row pairs (dg row
    // r + 1, hs row r), r = b T + t - 1, with dg's rows of t = 0 set to zero for it (and
    // restored after: they pair with the previous sequence's last state).
    auto dw = at::zeros(weights.sizes(), opts);
    if (B * T > 1) {
      std::vector<float> first(B * 4 * d);
      for (int64_t b = 0; b < B; ++b) {
        std::copy_n(dg + b * ld_a, 4 * d, first.data() + b * 4 * d);
        std::fill_n(dg + b * ld_a, 4 * d, 0.0f);
      }
      for (int64_t k = 0; k < H; ++k)
        sgemm(true, false, 4 * D, D, B * T - 1, 1, dg + 4 * d + k * 4 * D, 4 * d,
              hs.data_ptr<float>() + k * D, d, 0, dw.data_ptr<float>() + k * 4 * D * D, D);
      for (int64_t b = 0; b < B; ++b) std::copy_n(first.data() + b * 4 * d, 4 * d, dg + b * ld_a);
    }
    // pre's gradient in the kernel's layout, as a [B, T, 4, H, D] view.
    return {dpre.permute({0, 1, 3, 2, 4}), dw, dbias};
  }
};

}  // namespace

torch::Tensor slstm_recurrence(const torch::Tensor& pre, const torch::Tensor& recurrent,
                               const torch::Tensor& bias) {
  TORCH_CHECK(pre.dim() == 5 && pre.size(2) == 4, "slstm_recurrence: pre must be [B, T, 4, H, D]");
  const int64_t H = pre.size(3), D = pre.size(4);
  TORCH_CHECK(recurrent.dim() == 4 && recurrent.size(0) == 4 && recurrent.size(1) == H &&
                  recurrent.size(2) == D && recurrent.size(3) == D,
              "slstm_recurrence: recurrent must be [4, H, D, D] for pre [B, T, 4, H, D]");
  TORCH_CHECK(!bias.defined() || bias.sizes() == torch::IntArrayRef({4, H, D}),
              "slstm_recurrence: bias must be [4, H, D] for pre [B, T, 4, H, D]");
  if (!(pre.device().is_cpu() && pre.scalar_type() == at::kFloat &&
        recurrent.scalar_type() == at::kFloat &&
        (!bias.defined() || bias.scalar_type() == at::kFloat)))
    return slstm_recurrence_reference(pre, recurrent, bias);
  // The fused node's layout: each head's four gates' weights side by side.
  const auto weights = recurrent.permute({1, 0, 2, 3}).reshape({H, 4 * D, D}).contiguous();
  return FusedSlstm::apply(pre, weights, bias.defined() ? bias : at::empty({0}, pre.options()))[0];
}

}  // namespace induct::nn
