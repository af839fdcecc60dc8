#include "induct/nn/elementwise.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <mutex>

#include "gemm.hpp"
#include "simd_math.hpp"

namespace induct::nn {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// GELU (tanh approximation) of v and its derivative.
inline float gelu_tanh_value(float v) {
  const float t = simd::tanh_approx(kSqrt2OverPi * (v + kCubic * v * v * v));
  return 0.5f * v * (1.0f + t);
}
inline float gelu_tanh_slope(float v) {
  const float t = simd::tanh_approx(kSqrt2OverPi * (v + kCubic * v * v * v));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
  return 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
}

// Exact GELU x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2. erf as Eigen's float erf: an odd
// rational function of degree 13/8 on [-4, 4] (erf is +-1 in float beyond), absolute error
// below 4e-7, one division and no exp (Abramowitz and Stegun 7.1.26, used before, needed an
// exp and a division: the forward pass took 1.7x as long).
inline float erf_approx(float x) {
  x = x < -4.0f ? -4.0f : x;
  x = x > 4.0f ? 4.0f : x;
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 - 2.10102402082508e-06f;
  p = p * x2 - 5.69250639462346e-05f;
  p = p * x2 - 7.34990630326855e-04f;
  p = p * x2 - 2.95459980854025e-03f;
  p = p * x2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 - 2.13374055278905e-04f;
  q = q * x2 - 1.68282697438203e-03f;
  q = q * x2 - 7.37332916720468e-03f;
  q = q * x2 - 1.42647390514189e-02f;
  return x * p / q;
}

constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

inline float gelu_erf_value(float v) { return 0.5f * v * (1.0f + erf_approx(v * kInvSqrt2)); }
inline float gelu_erf_slope(float v) {
  const float cdf = 0.5f * (1.0f + erf_approx(v * kInvSqrt2));
  return cdf + v * kInvSqrt2Pi * simd::exp_approx(-0.5f * v * v);
}

// The bias and GELU after a product (gemm.hpp): u [M, N] += bias row by row, y = GELU(u); with
// a null bias u is only read (GELU alone: FusedGelu passes its input as one row).
template <bool exact>
__attribute__((always_inline)) inline void bias_gelu_rows(int64_t M, int64_t N, const float* bias,
                                                          float* u, float* y) {
  for (int64_t m = 0; m < M; ++m) {
    float* ur = u + m * N;
    float* yr = y + m * N;
    if (!bias) {
#pragma omp simd
      for (int64_t n = 0; n < N; ++n)
        yr[n] = exact ? gelu_erf_value(ur[n]) : gelu_tanh_value(ur[n]);
      continue;
    }
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) {
      const float v = ur[n] + bias[n];
      ur[n] = v;
      yr[n] = exact ? gelu_erf_value(v) : gelu_tanh_value(v);
    }
  }
}

// du = dy GELU'(u); dbias (may be null) = the column sums of du.
template <bool exact>
__attribute__((always_inline)) inline void gelu_bias_rows_backward(int64_t M, int64_t N,
                                                                   const float* u, const float* dy,
                                                                   float* du, float* dbias) {
  if (dbias)
    for (int64_t n = 0; n < N; ++n) dbias[n] = 0;
  for (int64_t m = 0; m < M; ++m) {
    const float* ur = u + m * N;
    const float* gr = dy + m * N;
    float* dr = du + m * N;
#pragma omp simd
    for (int64_t n = 0; n < N; ++n)
      dr[n] = gr[n] * (exact ? gelu_erf_slope(ur[n]) : gelu_tanh_slope(ur[n]));
    if (dbias) {
#pragma omp simd
      for (int64_t n = 0; n < N; ++n) dbias[n] += dr[n];
    }
  }
}

INDUCT_SIMD_CLONES void bias_gelu_tanh(int64_t M, int64_t N, const float* bias, float* u,
                                       float* y) {
  bias_gelu_rows<false>(M, N, bias, u, y);
}
INDUCT_SIMD_CLONES void bias_gelu_erf(int64_t M, int64_t N, const float* bias, float* u, float* y) {
  bias_gelu_rows<true>(M, N, bias, u, y);
}
INDUCT_SIMD_CLONES void gelu_tanh_bias_backward(int64_t M, int64_t N, const float* u,
                                                const float* dy, float* du, float* dbias) {
  gelu_bias_rows_backward<false>(M, N, u, dy, du, dbias);
}
INDUCT_SIMD_CLONES void gelu_erf_bias_backward(int64_t M, int64_t N, const float* u,
                                               const float* dy, float* du, float* dbias) {
  gelu_bias_rows_backward<true>(M, N, u, dy, du, dbias);
}

}  // namespace

void bias_gelu(int64_t M, int64_t N, const float* bias, bool exact, float* u, float* y) {
  (exact ? bias_gelu_erf : bias_gelu_tanh)(M, N, bias, u, y);
}

void gelu_bias_backward(int64_t M, int64_t N, const float* u, const float* dy, bool exact,
                        float* du, float* dbias) {
  (exact ? gelu_erf_bias_backward : gelu_tanh_bias_backward)(M, N, u, dy, du, dbias);
}

namespace {

class FusedGelu : public torch::autograd::Function<FusedGelu> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            bool exact) {
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    bias_gelu(1, xc.numel(), nullptr, exact, xc.data_ptr<float>(), y.data_ptr<float>());
    ctx->save_for_backward({xc});
    ctx->saved_data["exact"] = exact;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    const auto dy = grads[0].contiguous();
    auto dx = at::empty_like(x);
    gelu_bias_backward(1, x.numel(), x.data_ptr<float>(), dy.data_ptr<float>(),
                       ctx->saved_data["exact"].toBool(), dx.data_ptr<float>(), nullptr);
    return {dx, at::Tensor()};
  }
};

INDUCT_SIMD_CLONES void swiglu_forward(int64_t n, const float* g, const float* u, float* h) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) h[i] = g[i] * simd::sigmoid_approx(g[i]) * u[i];
}

INDUCT_SIMD_CLONES void swiglu_backward(int64_t n, const float* g, const float* u, const float* dh,
                                        float* dg, float* du) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float s = simd::sigmoid_approx(g[i]);
    du[i] = dh[i] * g[i] * s;
    dg[i] = simd::silu_backward(dh[i] * u[i], g[i], s);
  }
}

class FusedSwiGlu : public torch::autograd::Function<FusedSwiGlu> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& gate,
                            const at::Tensor& up) {
    auto g = gate.contiguous(), u = up.contiguous();
    auto h = at::empty_like(g);
    swiglu_forward(g.numel(), g.data_ptr<float>(), u.data_ptr<float>(), h.data_ptr<float>());
    ctx->save_for_backward({g, u});
    return h;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto dh = grads[0].contiguous();
    auto dg = at::empty_like(saved[0]), du = at::empty_like(saved[1]);
    swiglu_backward(dh.numel(), saved[0].data_ptr<float>(), saved[1].data_ptr<float>(),
                    dh.data_ptr<float>(), dg.data_ptr<float>(), du.data_ptr<float>());
    return {dg, du};
  }
};

// RMSNorm rows of n features. Forward keeps r = 1 / sqrt(mean(x^2) + eps) per row; backward,
// with g = dy * w: dx = r g - x r^3 (g . x) / n, and dw += dy x r.
INDUCT_SIMD_CLONES void rms_forward(int64_t rows, int64_t n, float eps, const float* x,
                                    const float* w, float* y, float* r) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    float* yr = y + row * n;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += xr[i] * xr[i];
    const float rr = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
    r[row] = rr;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * rr * w[i];
  }
}

INDUCT_SIMD_CLONES void rms_backward(int64_t rows, int64_t n, const float* x, const float* w,
                                     const float* r, const float* dy, float* dx, float* dw) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    const float* dyr = dy + row * n;
    float* dxr = dx + row * n;
    const float rr = r[row];
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t i = 0; i < n; ++i) dot += dyr[i] * w[i] * xr[i];
    const float k = rr * rr * rr * dot / static_cast<float>(n);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      dxr[i] = rr * dyr[i] * w[i] - k * xr[i];
      dw[i] += dyr[i] * xr[i] * rr;
    }
  }
}

class FusedRmsNorm : public torch::autograd::Function<FusedRmsNorm> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input,
                            const at::Tensor& weight, double eps) {
    const auto x = input.contiguous();
    const int64_t n = x.size(-1), rows = x.numel() / n;
    auto y = at::empty_like(x);
    auto r = at::empty({rows}, x.options());
    rms_forward(rows, n, static_cast<float>(eps), x.data_ptr<float>(), weight.data_ptr<float>(),
                y.data_ptr<float>(), r.data_ptr<float>());
    ctx->save_for_backward({x, weight});
    ctx->saved_data["r"] = r;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1];
    const auto r = ctx->saved_data["r"].toTensor();
    const auto dy = grads[0].contiguous();
    const int64_t n = x.size(-1), rows = x.numel() / n;
    auto dx = at::empty_like(x);
    auto dw = at::zeros_like(w);
    rms_backward(rows, n, x.data_ptr<float>(), w.data_ptr<float>(), r.data_ptr<float>(),
                 dy.data_ptr<float>(), dx.data_ptr<float>(), dw.data_ptr<float>());
    return {dx, dw, at::Tensor()};
  }
};

// LayerNorm rows of n features. Forward keeps the mean and r = 1 / sqrt(var + eps) per row (the
// biased variance, as LibTorch's); backward, with xhat = (x - mean) r and g = dy * w:
// dx = r (g - mean(g) - xhat mean(g xhat)), dw += dy xhat, db += dy.
// LayerNorm's rows with one affine map (w, b -> y) or, when w2 is not null, a second one of the
// same statistics (w2, b2 -> y2: GPT-NeoX's two norms of one residual stream). With groups > 1
// each row of x holds `groups` rows of n features (heads), and row g of them takes the affine
// maps' features g n to (g + 1) n.
INDUCT_SIMD_CLONES void layer_norm_forward(int64_t rows, int64_t n, int64_t groups, float eps,
                                           const float* x, const float* w0, const float* b0,
                                           float* y, const float* w2, const float* b2, float* y2,
                                           float* mean, float* r) {
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    const float* w = w0 + (row % groups) * n;
    const float* b = b0 + (row % groups) * n;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += xr[i];
    const float mu = sum * inv_n;
    float var = 0;
#pragma omp simd reduction(+ : var)
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mu) * (xr[i] - mu);
    const float rr = 1.0f / std::sqrt(var * inv_n + eps);
    mean[row] = mu;
    r[row] = rr;
    float* yr = y + row * n;
    if (w2) {
      float* y2r = y2 + row * n;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) {
        const float xhat = (xr[i] - mu) * rr;
        yr[i] = xhat * w[i] + b[i];
        y2r[i] = xhat * w2[i] + b2[i];
      }
    } else {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mu) * rr * w[i] + b[i];
    }
  }
}

// Its backward: the gradient through both maps is one of g = dy w (+ dy2 w2): one pass for dx.
// grad_row: scratch for one row's g (n floats).
INDUCT_SIMD_CLONES void layer_norm_backward(int64_t rows, int64_t n, int64_t groups, const float* x,
                                            const float* w0, const float* w2, const float* mean,
                                            const float* r, const float* dy, const float* dy2,
                                            float* dx, float* dw0, float* db0, float* dw2,
                                            float* db2, float* grad_row) {
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    const float* w = w0 + (row % groups) * n;
    float* dw = dw0 + (row % groups) * n;
    float* db = db0 + (row % groups) * n;
    const float* dyr = dy + row * n;
    const float* dy2r = w2 ? dy2 + row * n : nullptr;
    float* dxr = dx + row * n;
    const float mu = mean[row], rr = r[row];
    if (!w2) {  // one norm
      float sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
      for (int64_t i = 0; i < n; ++i) {
        const float g = dyr[i] * w[i];
        sum_g += g;
        sum_gx += g * (xr[i] - mu) * rr;
      }
      const float a = sum_g * inv_n, c = sum_gx * inv_n;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) {
        const float xhat = (xr[i] - mu) * rr;
        dxr[i] = rr * (dyr[i] * w[i] - a - xhat * c);
        dw[i] += dyr[i] * xhat;
        db[i] += dyr[i];
      }
      continue;
    }
    float* g = grad_row;  // two norms: g = dy w + dy2 w2
    float sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int64_t i = 0; i < n; ++i) {
      g[i] = dyr[i] * w[i] + dy2r[i] * w2[i];
      sum_g += g[i];
      sum_gx += g[i] * (xr[i] - mu) * rr;
    }
    const float a = sum_g * inv_n, c = sum_gx * inv_n;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float xhat = (xr[i] - mu) * rr;
      dxr[i] = rr * (g[i] - a - xhat * c);
      dw[i] += dyr[i] * xhat;
      db[i] += dyr[i];
      dw2[i] += dy2r[i] * xhat;
      db2[i] += dy2r[i];
    }
  }
}

// One LayerNorm, or two of the same input when weight2 is defined (outputs y, y2); `groups`
// LayerNorms of equal parts of each row when groups > 1 (one map). An undefined bias is zero
// (and gets no gradient).
class FusedLayerNorm : public torch::autograd::Function<FusedLayerNorm> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& input, const at::Tensor& weight,
                                                const at::Tensor& bias_or_empty,
                                                const c10::optional<at::Tensor>& weight2_or_none,
                                                const c10::optional<at::Tensor>& bias2_or_none,
                                                double eps, int64_t groups) {
    const auto x = input.contiguous();
    const bool two = weight2_or_none.has_value();
    const at::Tensor weight2 = two ? *weight2_or_none : at::Tensor();
    const at::Tensor bias2 = two ? *bias2_or_none : at::Tensor();
    const bool has_bias = bias_or_empty.numel() > 0;
    const at::Tensor bias = has_bias ? bias_or_empty : at::zeros_like(weight);
    const int64_t n = x.size(-1) / groups, rows = x.numel() / n;
    auto y = at::empty_like(x);
    auto y2 = two ? at::empty_like(x) : at::Tensor();
    auto mean = at::empty({rows}, x.options()), r = at::empty({rows}, x.options());
    layer_norm_forward(
        rows, n, groups, static_cast<float>(eps), x.data_ptr<float>(), weight.data_ptr<float>(),
        bias.data_ptr<float>(), y.data_ptr<float>(), two ? weight2.data_ptr<float>() : nullptr,
        two ? bias2.data_ptr<float>() : nullptr, two ? y2.data_ptr<float>() : nullptr,
        mean.data_ptr<float>(), r.data_ptr<float>());
    ctx->save_for_backward(two ? torch::autograd::variable_list{x, weight, weight2}
                               : torch::autograd::variable_list{x, weight});
    ctx->saved_data["mean"] = mean;
    ctx->saved_data["r"] = r;
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["bias"] = has_bias;
    if (two) return {y, y2};
    return {y};
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1];
    const bool two = saved.size() == 3;
    const at::Tensor w2 = two ? saved[2] : at::Tensor();
    const auto mean = ctx->saved_data["mean"].toTensor(), r = ctx->saved_data["r"].toTensor();
    const int64_t groups = ctx->saved_data["groups"].toInt();
    const auto dy = grads[0].contiguous();
    const auto dy2 = two ? grads[1].contiguous() : at::Tensor();
    const int64_t n = x.size(-1) / groups, rows = x.numel() / n;
    auto dx = at::empty_like(x);
    auto dw = at::zeros_like(w), db = at::zeros_like(w);
    auto dw2 = two ? at::zeros_like(w2) : at::Tensor(),
         db2 = two ? at::zeros_like(w2) : at::Tensor();
    auto scratch = at::empty({n}, x.options());
    layer_norm_backward(
        rows, n, groups, x.data_ptr<float>(), w.data_ptr<float>(),
        two ? w2.data_ptr<float>() : nullptr, mean.data_ptr<float>(), r.data_ptr<float>(),
        dy.data_ptr<float>(), two ? dy2.data_ptr<float>() : nullptr, dx.data_ptr<float>(),
        dw.data_ptr<float>(), db.data_ptr<float>(), two ? dw2.data_ptr<float>() : nullptr,
        two ? db2.data_ptr<float>() : nullptr, scratch.data_ptr<float>());
    return {dx,          dw,  ctx->saved_data["bias"].toBool() ? db : at::Tensor(),
            dw2,         db2, at::Tensor(),
            at::Tensor()};
  }
};

// murmur3's 32-bit finaliser: a bijection that mixes every input bit into every output bit.
inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

// Element i is kept when the top 24 bits of its hash, as a fraction, reach p.
INDUCT_SIMD_CLONES void mask_kernel(uint32_t lo, uint32_t hi, uint32_t threshold, float scale,
                                    int64_t count, float* out) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t h =
        mix(mix(static_cast<uint32_t>(i) ^ lo) + hi + static_cast<uint32_t>(i >> 32));
    out[i] = (h >> 8) >= threshold ? scale : 0.0f;
  }
}

INDUCT_SIMD_CLONES void apply_mask(int64_t n, const float* x, const float* mask, float* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * mask[i];
}

class FusedDropout : public torch::autograd::Function<FusedDropout> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, double p) {
    const uint64_t seed = draw_seed();
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    dropout_mask(seed, p, xc.numel(), y.data_ptr<float>());
    apply_mask(xc.numel(), xc.data_ptr<float>(), y.data_ptr<float>(), y.data_ptr<float>());
    ctx->saved_data["seed"] = static_cast<int64_t>(seed);
    ctx->saved_data["p"] = p;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    const double p = ctx->saved_data["p"].toDouble();
    const auto dy = grads[0].contiguous();
    auto dx = at::empty_like(dy);
    dropout_mask(seed, p, dy.numel(), dx.data_ptr<float>());
    apply_mask(dy.numel(), dy.data_ptr<float>(), dx.data_ptr<float>(), dx.data_ptr<float>());
    return {dx, at::Tensor()};
  }
};

bool fusable(const at::Tensor& x) { return x.device().is_cpu() && x.scalar_type() == at::kFloat; }

}  // namespace

uint64_t draw_seed() {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(generator)->random64();
}

void dropout_mask(uint64_t seed, double p, int64_t count, float* out) {
  const auto threshold = static_cast<uint32_t>(p * double(1u << 24));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  mask_kernel(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), threshold, scale,
              count, out);
}

at::Tensor gelu_tanh(const at::Tensor& x) {
  if (!fusable(x)) return at::gelu(x, "tanh");
  return FusedGelu::apply(x, false);
}

at::Tensor gelu(const at::Tensor& x) {
  if (!fusable(x)) return at::gelu(x);
  return FusedGelu::apply(x, true);
}

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (!fusable(gate) || !fusable(up) || gate.sizes() != up.sizes()) return at::silu(gate) * up;
  return FusedSwiGlu::apply(gate, up);
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (!fusable(x) || !fusable(weight) || !weight.is_contiguous())
    return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
  return FusedRmsNorm::apply(x, weight, eps);
}

at::Tensor layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      double eps) {
  return head_norm(x, 1, weight, bias, eps);
}

namespace {
// Whether t is an affine map the fused LayerNorm reads for x: a float CPU vector as long as x's
// last dimension (x at least one-dimensional).
bool fusable_affine(const at::Tensor& t, const at::Tensor& x) {
  return t.defined() && fusable(t) && t.dim() == 1 && t.is_contiguous() && t.size(0) == x.size(-1);
}
}  // namespace

at::Tensor head_norm(const at::Tensor& x, int64_t heads, const at::Tensor& weight,
                     const at::Tensor& bias, double eps) {
  TORCH_CHECK(heads >= 1 && x.dim() >= 1 && x.size(-1) % heads == 0, "head_norm: ", heads,
              " heads do not divide the last dimension of ", x.sizes());
  const bool fused =
      fusable(x) && fusable_affine(weight, x) && (!bias.defined() || fusable_affine(bias, x));
  if (fused)
    return FusedLayerNorm::apply(x, weight, bias.defined() ? bias : at::empty({0}, x.options()),
                                 c10::nullopt, c10::nullopt, eps, heads)[0];
  if (heads == 1) return at::layer_norm(x, {x.size(-1)}, weight, bias, eps);
  const auto sizes = x.sizes().vec();
  return at::group_norm(x.reshape({-1, x.size(-1)}), heads, weight, bias, eps).reshape(sizes);
}

std::pair<at::Tensor, at::Tensor> layer_norm_pair(const at::Tensor& x, const at::Tensor& weight,
                                                  const at::Tensor& bias, const at::Tensor& weight2,
                                                  const at::Tensor& bias2, double eps) {
  const bool fused = fusable(x) && x.dim() >= 1 && fusable_affine(weight, x) &&
                     fusable_affine(bias, x) && fusable_affine(weight2, x) &&
                     fusable_affine(bias2, x);
  if (!fused) return {layer_norm(x, weight, bias, eps), layer_norm(x, weight2, bias2, eps)};
  auto out = FusedLayerNorm::apply(x, weight, bias, c10::optional<at::Tensor>(weight2),
                                   c10::optional<at::Tensor>(bias2), eps, 1);
  return {out[0], out[1]};
}

at::Tensor dropout(const at::Tensor& x, double p, bool training) {
  TORCH_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1)");
  if (!training || p == 0) return x;
  if (!fusable(x)) return at::dropout(x, p, true);
  return FusedDropout::apply(x, p);
}

}  // namespace induct::nn
