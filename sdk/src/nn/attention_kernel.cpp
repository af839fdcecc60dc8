// The fused causal attention core and rotary embedding (induct/nn/attention.hpp:
// causal_attention, apply_rotary).
//
// LibTorch's CPU bmm runs small batched products as one select + mm per batch entry: for the
// [B * heads] tiny products of attention that was thousands of operations per training step
// (at d_model 64, 2 layers, 10 tokens: about 9,000 selects per step, most of the step). Here
// each (batch, head) is one pass of plain loops over the causal triangle, vectorised along the
// head dimension, forward and backward.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <type_traits>
#include <vector>

#include "induct/nn/attention.hpp"
#include "induct/nn/elementwise.hpp"
#include "simd_math.hpp"

namespace induct::nn {

namespace {

// Strides of a [B, H, T, D] tensor whose last dimension is contiguous.
struct Layout {
  int64_t b, h, t;
  explicit Layout(const at::Tensor& x) : b(x.stride(0)), h(x.stride(1)), t(x.stride(2)) {}
  int64_t at(int64_t bi, int64_t hi, int64_t ti) const { return bi * b + hi * h + ti * t; }
};

template <typename scalar_t>
inline scalar_t dot(const scalar_t* a, const scalar_t* b, int64_t n) {
  scalar_t s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

template <typename scalar_t>
inline void axpy(scalar_t alpha, const scalar_t* x, scalar_t* y, int64_t n) {
#pragma omp simd
  for (int64_t d = 0; d < n; ++d) y[d] += alpha * x[d];
}

// One (batch, head). p: [T, T] softmax weights out (0 above the diagonal); drop: [T, T] kept
// mask scaled by 1 / (1 - p), or null; y: rows of the output, stride y_t.
template <typename scalar_t>
__attribute__((always_inline)) inline void forward_head(int64_t T, int64_t D, scalar_t scale, const scalar_t* q,
                                     const scalar_t* k, const scalar_t* v, int64_t qt, int64_t kt,
                                     int64_t vt, const scalar_t* drop, scalar_t* p, scalar_t* y,
                                     int64_t yt) {
  for (int64_t i = 0; i < T; ++i) {
    scalar_t* row = p + i * T;
    scalar_t m = -std::numeric_limits<scalar_t>::infinity();
    for (int64_t j = 0; j <= i; ++j) {
      row[j] = dot(q + i * qt, k + j * kt, D) * scale;
      m = row[j] > m ? row[j] : m;
    }
    scalar_t sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j <= i; ++j) {
      row[j] = simd::exp_approx(row[j] - m);
      sum += row[j];
    }
    const scalar_t inv = scalar_t(1) / sum;
    for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
    for (int64_t j = i + 1; j < T; ++j) row[j] = 0;
    scalar_t* yi = y + i * yt;
    for (int64_t d = 0; d < D; ++d) yi[d] = 0;
    for (int64_t j = 0; j <= i; ++j) axpy(drop ? row[j] * drop[i * T + j] : row[j], v + j * vt, yi, D);
  }
}

// One (batch, head) backward: dq, dk, dv ([T, D] contiguous, zeroed) from dy (stride dyt).
template <typename scalar_t>
__attribute__((always_inline)) inline void backward_head(int64_t T, int64_t D, scalar_t scale, const scalar_t* q,
                                      const scalar_t* k, const scalar_t* v, int64_t qt, int64_t kt,
                                      int64_t vt, const scalar_t* drop, const scalar_t* p,
                                      const scalar_t* dy, int64_t dyt, scalar_t* dq, scalar_t* dk,
                                      scalar_t* dv, scalar_t* dp) {
  for (int64_t i = 0; i < T; ++i) {
    const scalar_t* row = p + i * T;
    const scalar_t* dyi = dy + i * dyt;
    // dP (through the dropout mask) and dV.
    scalar_t rowdot = 0;
    for (int64_t j = 0; j <= i; ++j) {
      const scalar_t keep = drop ? drop[i * T + j] : scalar_t(1);
      axpy(row[j] * keep, dyi, dv + j * D, D);
      dp[j] = dot(dyi, v + j * vt, D) * keep;
      rowdot += dp[j] * row[j];
    }
    // dS = P (dP - rowdot), then dQ and dK.
    for (int64_t j = 0; j <= i; ++j) {
      const scalar_t ds = row[j] * (dp[j] - rowdot) * scale;
      axpy(ds, k + j * kt, dq + i * D, D);
      axpy(ds, q + i * qt, dk + j * D, D);
    }
  }
}

// The float kernels, compiled for each vector width (target_clones does not apply to templates).
INDUCT_SIMD_CLONES void forward_head_float(int64_t T, int64_t D, float scale, const float* q,
                                           const float* k, const float* v, int64_t qt, int64_t kt,
                                           int64_t vt, const float* drop, float* p, float* y,
                                           int64_t yt) {
  forward_head<float>(T, D, scale, q, k, v, qt, kt, vt, drop, p, y, yt);
}

INDUCT_SIMD_CLONES void backward_head_float(int64_t T, int64_t D, float scale, const float* q,
                                            const float* k, const float* v, int64_t qt, int64_t kt,
                                            int64_t vt, const float* drop, const float* p,
                                            const float* dy, int64_t dyt, float* dq, float* dk,
                                            float* dv, float* dp) {
  backward_head<float>(T, D, scale, q, k, v, qt, kt, vt, drop, p, dy, dyt, dq, dk, dv, dp);
}

template <typename scalar_t>
void forward_head_any(int64_t T, int64_t D, scalar_t scale, const scalar_t* q, const scalar_t* k,
                      const scalar_t* v, int64_t qt, int64_t kt, int64_t vt, const scalar_t* drop,
                      scalar_t* p, scalar_t* y, int64_t yt) {
  if constexpr (std::is_same_v<scalar_t, float>)
    forward_head_float(T, D, scale, q, k, v, qt, kt, vt, drop, p, y, yt);
  else
    forward_head<scalar_t>(T, D, scale, q, k, v, qt, kt, vt, drop, p, y, yt);
}

template <typename scalar_t>
void backward_head_any(int64_t T, int64_t D, scalar_t scale, const scalar_t* q, const scalar_t* k,
                       const scalar_t* v, int64_t qt, int64_t kt, int64_t vt, const scalar_t* drop,
                       const scalar_t* p, const scalar_t* dy, int64_t dyt, scalar_t* dq,
                       scalar_t* dk, scalar_t* dv, scalar_t* dp) {
  if constexpr (std::is_same_v<scalar_t, float>)
    backward_head_float(T, D, scale, q, k, v, qt, kt, vt, drop, p, dy, dyt, dq, dk, dv, dp);
  else
    backward_head<scalar_t>(T, D, scale, q, k, v, qt, kt, vt, drop, p, dy, dyt, dq, dk, dv, dp);
}

class FusedAttention : public torch::autograd::Function<FusedAttention> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& q, const at::Tensor& k,
                                                const at::Tensor& v, double dropout, bool training) {
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
    auto p = at::empty({B, H, T, T}, q.options());
    at::Tensor drop;
    if (training && dropout > 0) {
      drop = at::empty({B, H, T, T}, q.options());
      if (q.scalar_type() == at::kFloat)  // the SDK's dropout mask
        dropout_mask(draw_seed(), dropout, drop.numel(), drop.data_ptr<float>());
      else  // LibTorch's draws, as its dropout on [B, H, T, T] (tests compare with it)
        drop.bernoulli_(1 - dropout).div_(1 - dropout);
    }
    auto y = at::empty({B, T, H * D}, q.options());  // heads merged: [B, T, H, D]
    const Layout lq(q), lk(k), lv(v);
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "causal_attention", [&] {
      const auto scale = static_cast<scalar_t>(1.0 / std::sqrt(static_cast<double>(D)));
      const scalar_t *qp = q.data_ptr<scalar_t>(), *kp = k.data_ptr<scalar_t>(), *vp = v.data_ptr<scalar_t>();
      const scalar_t* dp = drop.defined() ? drop.data_ptr<scalar_t>() : nullptr;
      scalar_t *pp = p.data_ptr<scalar_t>(), *yp = y.data_ptr<scalar_t>();
      at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        for (int64_t bh = begin; bh < end; ++bh) {
          const int64_t b = bh / H, h = bh % H;
          forward_head_any<scalar_t>(T, D, scale, qp + lq.at(b, h, 0), kp + lk.at(b, h, 0),
                                 vp + lv.at(b, h, 0), lq.t, lk.t, lv.t,
                                 dp ? dp + bh * T * T : nullptr, pp + bh * T * T,
                                 yp + b * T * H * D + h * D, H * D);
        }
      });
    });
    ctx->save_for_backward({q, k, v});
    ctx->saved_data["p"] = p;
    ctx->saved_data["drop"] = drop;
    return {y};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2];
    const auto p = ctx->saved_data["p"].toTensor();
    const auto drop_value = ctx->saved_data["drop"];
    const at::Tensor drop = drop_value.isTensor() ? drop_value.toTensor() : at::Tensor();
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
    const auto dy = grads[0].contiguous();  // [B, T, H * D]
    auto dq = at::zeros({B, H, T, D}, q.options());
    auto dk = at::zeros({B, H, T, D}, q.options());
    auto dv = at::zeros({B, H, T, D}, q.options());
    const Layout lq(q), lk(k), lv(v);
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "causal_attention_backward", [&] {
      const auto scale = static_cast<scalar_t>(1.0 / std::sqrt(static_cast<double>(D)));
      const scalar_t *qp = q.data_ptr<scalar_t>(), *kp = k.data_ptr<scalar_t>(), *vp = v.data_ptr<scalar_t>();
      const scalar_t* dropp = drop.defined() ? drop.data_ptr<scalar_t>() : nullptr;
      const scalar_t *pp = p.data_ptr<scalar_t>(), *dyp = dy.data_ptr<scalar_t>();
      scalar_t *dqp = dq.data_ptr<scalar_t>(), *dkp = dk.data_ptr<scalar_t>(), *dvp = dv.data_ptr<scalar_t>();
      at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        std::vector<scalar_t> row(static_cast<size_t>(T));
        for (int64_t bh = begin; bh < end; ++bh) {
          const int64_t b = bh / H, h = bh % H;
          backward_head_any<scalar_t>(T, D, scale, qp + lq.at(b, h, 0), kp + lk.at(b, h, 0),
                                  vp + lv.at(b, h, 0), lq.t, lk.t, lv.t,
                                  dropp ? dropp + bh * T * T : nullptr, pp + bh * T * T,
                                  dyp + b * T * H * D + h * D, H * D, dqp + bh * T * D,
                                  dkp + bh * T * D, dvp + bh * T * D, row.data());
        }
      });
    });
    return {dq, dk, dv, at::Tensor(), at::Tensor()};
  }
};

// Rotary on one [T, D] row block of a head: pairs (i, i + rd/2) of the first rd features
// rotate by the tables' angles, the rest pass through. Backward is the inverse rotation.
INDUCT_SIMD_CLONES void rotary_head(int64_t T, int64_t D, int64_t rd, const float* x, int64_t xt,
                                    const float* cos, const float* sin, float* y, bool inverse) {
  const int64_t half = rd / 2;
  const float sign = inverse ? -1.0f : 1.0f;
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = x + t * xt;
    const float* c = cos + t * rd;
    const float* s = sin + t * rd;
    float* yr = y + t * D;
#pragma omp simd
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = xr[i], x2 = xr[i + half];
      yr[i] = x1 * c[i] - sign * x2 * s[i];
      yr[i + half] = x2 * c[i + half] + sign * x1 * s[i + half];
    }
    for (int64_t d = rd; d < D; ++d) yr[d] = xr[d];
  }
}

class FusedRotary : public torch::autograd::Function<FusedRotary> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& cos, const at::Tensor& sin) {
    ctx->saved_data["cos"] = cos;
    ctx->saved_data["sin"] = sin;
    return run(x, cos, sin, false);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto cos = ctx->saved_data["cos"].toTensor(), sin = ctx->saved_data["sin"].toTensor();
    return {run(grads[0], cos, sin, true), at::Tensor(), at::Tensor()};
  }

 private:
  // x: [B, H, T, D] (any strides); cos, sin: [T, rd] contiguous float.
  static at::Tensor run(const at::Tensor& input, const at::Tensor& cos, const at::Tensor& sin,
                        bool inverse) {
    const auto x = input.stride(3) == 1 ? input : input.contiguous();
    const int64_t B = x.size(0), H = x.size(1), T = x.size(2), D = x.size(3), rd = cos.size(1);
    auto y = at::empty({B, H, T, D}, x.options());
    const Layout lx(x);
    const float *xp = x.data_ptr<float>(), *cp = cos.data_ptr<float>(), *sp = sin.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh)
        rotary_head(T, D, rd, xp + lx.at(bh / H, bh % H, 0), lx.t, cp, sp, yp + bh * T * D, inverse);
    });
    return y;
  }
};

// The rotation as LibTorch operations (other devices and types).
at::Tensor rotary_by_ops(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t rd = cos.size(-1);
  const int64_t T = x.size(-2);
  auto c = cos.slice(0, 0, T).to(x.dtype());  // [T, rd]
  auto s = sin.slice(0, 0, T).to(x.dtype());
  auto rot = x.narrow(-1, 0, rd);             // [B, H, T, rd]
  auto halves = rot.chunk(2, -1);
  auto rotated = at::cat({-halves[1], halves[0]}, -1);
  auto out = rot * c + rotated * s;
  if (rd == x.size(-1)) return out;
  return at::cat({out, x.narrow(-1, rd, x.size(-1) - rd)}, -1);
}

// The same computation as LibTorch operations (CUDA, and the tests' reference).
at::Tensor attention_by_ops(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            double dropout, bool training) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  auto scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));
  auto future = at::ones({T, T}, q.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  auto weights = at::softmax(scores, -1);
  if (training && dropout > 0) weights = at::dropout(weights, dropout, true);  // LibTorch's draws
  return at::matmul(weights, v).transpose(1, 2).reshape({B, T, H * D});
}

}  // namespace

at::Tensor apply_rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t T = x.size(-2);
  if (!(x.dim() == 4 && x.device().is_cpu() && x.scalar_type() == at::kFloat))
    return rotary_by_ops(x, cos, sin);
  return FusedRotary::apply(x, cos.slice(0, 0, T).to(at::kFloat).contiguous(),
                            sin.slice(0, 0, T).to(at::kFloat).contiguous());
}

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            double dropout, bool training, bool fused) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes() && v.sizes() == q.sizes(),
              "causal_attention: q, k and v must be [B, heads, T, head_dim] alike");
  const bool cpu = q.device().is_cpu() && k.device().is_cpu() && v.device().is_cpu();
  if (!fused || !cpu || q.scalar_type() != k.scalar_type() || q.scalar_type() != v.scalar_type())
    return attention_by_ops(q, k, v, dropout, training);
  auto last_contiguous = [](const at::Tensor& x) { return x.stride(3) == 1 ? x : x.contiguous(); };
  return FusedAttention::apply(last_contiguous(q), last_contiguous(k), last_contiguous(v), dropout,
                               training)[0];
}

}  // namespace induct::nn
