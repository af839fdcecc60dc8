// The fused causal attention core and rotary embedding (induct/nn/attention.hpp:
// causal_attention, apply_rotary).
//
// LibTorch's CPU bmm runs small batched products as one select + mm per batch entry: for the
// [B * heads] tiny products of attention that was thousands of operations per training step
// (at d_model 64, 2 layers, 10 tokens: about 9,000 selects per step, most of the step). Here
// each (batch, head) is one pass over its causal triangle, forward and backward, in small
// register-blocked products on per-head copies of its operands.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
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

// One (batch, head) is a handful of tiny matrix products (T x T x D, with D the head size, 16
// or 32 in the small models) around a softmax. Dot products along D (a horizontal sum per
// (query, key) pair) and row updates through memory (a store-to-load chain per key) made the
// first version of these loops run at a few GFLOP/s. Here every product keeps its
// accumulators in vector registers (GCC's generic vectors of 64 bytes: one AVX-512 register,
// two AVX2 ones), runs along a contiguous, zero-padded dimension of a per-head copy of its
// operands, and works on kRows rows at once so that the FMA chains overlap.
// (The vectors never cross a call that is not inlined, so the ABI note GCC gives for 64-byte
// vectors in the clones without AVX-512 does not apply.)
#pragma GCC diagnostic ignored "-Wpsabi"
template <typename S>
struct Vec {
  typedef S type __attribute__((vector_size(64)));
  typedef S unaligned __attribute__((vector_size(64), aligned(sizeof(S)), may_alias));
  static constexpr int64_t lanes = 64 / sizeof(S);
  static type load(const S* p) { return *reinterpret_cast<const unaligned*>(p); }
  static void store(S* p, type v) { *reinterpret_cast<unaligned*>(p) = v; }
  static type zero() { return type{}; }
};

constexpr int64_t kRows = 4;

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// C[r, :n] = sum_k A[r, k] * B[k, :] for rows r0 <= r < r0 + kRows (rows >= rows_end are
// skipped), k < k_end(r0) shared by the block; A row-major with stride lda, B [k, ld] padded
// to whole vectors, C stride ldc; only the first `n` columns of C are written.
template <typename S>
__attribute__((always_inline)) inline void block_product(int64_t r0, int64_t rows_end, int64_t k_begin,
                                                         int64_t k_end, const S* a, int64_t lda,
                                                         const S* b, int64_t ldb, int64_t n, S* c,
                                                         int64_t ldc, S alpha) {
  using V = Vec<S>;
  const int64_t rows = std::min(kRows, rows_end - r0);
  for (int64_t c0 = 0; c0 < n; c0 += V::lanes) {
    typename V::type acc[kRows];
    for (int64_t r = 0; r < kRows; ++r) acc[r] = V::zero();
    for (int64_t k = k_begin; k < k_end; ++k) {
      const auto bk = V::load(b + k * ldb + c0);
      for (int64_t r = 0; r < kRows; ++r)
        acc[r] += a[(r0 + (r < rows ? r : 0)) * lda + k] * bk;
    }
    const int64_t width = std::min(V::lanes, n - c0);
    for (int64_t r = 0; r < rows; ++r) {
      const auto out = acc[r] * alpha;
      if (width == V::lanes) {
        V::store(c + (r0 + r) * ldc + c0, out);
      } else {
        for (int64_t l = 0; l < width; ++l) c[(r0 + r) * ldc + c0 + l] = out[l];
      }
    }
  }
}

// Per-thread copies of one head's operands, padded to whole vectors.
template <typename S>
struct HeadBuffers {
  int64_t T, D, Tp, Dp;
  std::vector<S> a, b, c, d, e, f;
  HeadBuffers(int64_t T_, int64_t D_) : T(T_), D(D_) {
    Tp = round_up(T, Vec<S>::lanes);
    Dp = round_up(D, Vec<S>::lanes);
  }
  // rows [T][Dp] from a strided source, zero-padded
  static void rows(std::vector<S>& dst, const S* src, int64_t st, int64_t T, int64_t D, int64_t Dp) {
    dst.assign(static_cast<size_t>(T * Dp), S(0));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) dst[t * Dp + d] = src[t * st + d];
  }
  // transposed [D][Tp] from a strided source, zero-padded
  static void columns(std::vector<S>& dst, const S* src, int64_t st, int64_t T, int64_t D, int64_t Tp) {
    dst.assign(static_cast<size_t>(D * Tp), S(0));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) dst[d * Tp + t] = src[t * st + d];
  }
};

// One (batch, head). p: [T, T] softmax weights out (0 above the diagonal); drop: [T, T] kept
// mask scaled by 1 / (1 - p), or null; y: rows of the output, stride yt.
template <typename S>
__attribute__((always_inline)) inline void forward_head(HeadBuffers<S>& w, S scale, const S* q,
                                                        const S* k, const S* v, int64_t qt,
                                                        int64_t kt, int64_t vt, const S* drop,
                                                        S* p, S* y, int64_t yt) {
  const int64_t T = w.T, D = w.D, Tp = w.Tp, Dp = w.Dp;
  HeadBuffers<S>::columns(w.a, k, kt, T, D, Tp);  // K^T [D][Tp]
  HeadBuffers<S>::rows(w.b, v, vt, T, D, Dp);     // V [T][Dp]
  w.c.assign(static_cast<size_t>(T * Tp), S(0));  // scores, then weights (with dropout) [T][Tp]
  S* s = w.c.data();
  for (int64_t i0 = 0; i0 < T; i0 += kRows) {
    const int64_t keys = std::min(i0 + kRows, T);  // keys any row of the block sees
    block_product<S>(i0, T, 0, D, q, qt, w.a.data(), Tp, keys, s, Tp, scale);
    for (int64_t i = i0; i < keys; ++i) {
      S* row = s + i * Tp;
      S m = row[0];
      for (int64_t j = 1; j <= i; ++j) m = row[j] > m ? row[j] : m;
      S sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j <= i; ++j) {
        row[j] = simd::exp_approx(row[j] - m);
        sum += row[j];
      }
      const S inv = S(1) / sum;
      S* pi = p + i * T;
#pragma omp simd
      for (int64_t j = 0; j <= i; ++j) {
        row[j] *= inv;
        pi[j] = row[j];
      }
      for (int64_t j = i + 1; j < T; ++j) pi[j] = 0;
      for (int64_t j = i + 1; j < keys; ++j) row[j] = 0;  // the block's product wrote these
      if (drop) {
        const S* di = drop + i * T;
#pragma omp simd
        for (int64_t j = 0; j <= i; ++j) row[j] *= di[j];
      }
    }
    // Y rows of the block = weights x V over the keys the block sees (zeros past each diagonal)
    block_product<S>(i0, T, 0, keys, s, Tp, w.b.data(), Dp, D, y, yt, S(1));
  }
}

// One (batch, head) backward: dq, dk, dv ([T, D] contiguous, every element written) from dy
// (stride dyt) and the forward's weights p.
template <typename S>
__attribute__((always_inline)) inline void backward_head(HeadBuffers<S>& w, S scale, const S* q,
                                                         const S* k, const S* v, int64_t qt,
                                                         int64_t kt, int64_t vt, const S* drop,
                                                         const S* p, const S* dy, int64_t dyt,
                                                         S* dq, S* dk, S* dv) {
  const int64_t T = w.T, D = w.D, Tp = w.Tp, Dp = w.Dp;
  HeadBuffers<S>::columns(w.a, v, vt, T, D, Tp);  // V^T [D][Tp]
  w.b.assign(static_cast<size_t>(T * Tp), S(0));  // dS, then transposed below [T][Tp]
  w.c.assign(static_cast<size_t>(T * Tp), S(0));  // weights with dropout [T][Tp]
  S *ds = w.b.data(), *pd = w.c.data();
  for (int64_t i0 = 0; i0 < T; i0 += kRows) {
    const int64_t keys = std::min(i0 + kRows, T);
    block_product<S>(i0, T, 0, D, dy, dyt, w.a.data(), Tp, keys, ds, Tp, S(1));  // dy V^T
    for (int64_t i = i0; i < keys; ++i) {
      S* row = ds + i * Tp;
      S* pdi = pd + i * Tp;
      const S* pi = p + i * T;
      const S* di = drop ? drop + i * T : nullptr;
      S rowdot = 0;
#pragma omp simd reduction(+ : rowdot)
      for (int64_t j = 0; j <= i; ++j) {
        const S keep = di ? di[j] : S(1);
        row[j] *= keep;  // dP through the dropout mask
        pdi[j] = pi[j] * keep;
        rowdot += row[j] * pi[j];
      }
#pragma omp simd
      for (int64_t j = 0; j <= i; ++j) row[j] = pi[j] * (row[j] - rowdot) * scale;
      for (int64_t j = i + 1; j < keys; ++j) row[j] = 0;
    }
  }
  // dQ = dS K
  HeadBuffers<S>::rows(w.d, k, kt, T, D, Dp);
  for (int64_t i0 = 0; i0 < T; i0 += kRows)
    block_product<S>(i0, T, 0, std::min(i0 + kRows, T), ds, Tp, w.d.data(), Dp, D, dq, D, S(1));
  // dK = dS^T Q and dV = P^T dY, from the transposed [T][Tp] copies (row j: column j; zero
  // before the diagonal, so each block starts at its first row).
  auto transpose = [&](const S* src, std::vector<S>& dst) {
    dst.assign(static_cast<size_t>(T * Tp), S(0));
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j <= i; ++j) dst[j * Tp + i] = src[i * Tp + j];
  };
  HeadBuffers<S>::rows(w.d, q, qt, T, D, Dp);
  transpose(ds, w.e);
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, j0, T, w.e.data(), Tp, w.d.data(), Dp, D, dk, D, S(1));
  HeadBuffers<S>::rows(w.d, dy, dyt, T, D, Dp);
  transpose(pd, w.f);
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, j0, T, w.f.data(), Tp, w.d.data(), Dp, D, dv, D, S(1));
}

// The float kernels, compiled for each vector width (target_clones does not apply to templates).
INDUCT_SIMD_CLONES void forward_head_float(HeadBuffers<float>& w, float scale, const float* q,
                                           const float* k, const float* v, int64_t qt, int64_t kt,
                                           int64_t vt, const float* drop, float* p, float* y,
                                           int64_t yt) {
  forward_head<float>(w, scale, q, k, v, qt, kt, vt, drop, p, y, yt);
}

INDUCT_SIMD_CLONES void backward_head_float(HeadBuffers<float>& w, float scale, const float* q,
                                            const float* k, const float* v, int64_t qt, int64_t kt,
                                            int64_t vt, const float* drop, const float* p,
                                            const float* dy, int64_t dyt, float* dq, float* dk,
                                            float* dv) {
  backward_head<float>(w, scale, q, k, v, qt, kt, vt, drop, p, dy, dyt, dq, dk, dv);
}

template <typename S>
void forward_head_any(HeadBuffers<S>& w, S scale, const S* q, const S* k, const S* v, int64_t qt,
                      int64_t kt, int64_t vt, const S* drop, S* p, S* y, int64_t yt) {
  if constexpr (std::is_same_v<S, float>)
    forward_head_float(w, scale, q, k, v, qt, kt, vt, drop, p, y, yt);
  else
    forward_head<S>(w, scale, q, k, v, qt, kt, vt, drop, p, y, yt);
}

template <typename S>
void backward_head_any(HeadBuffers<S>& w, S scale, const S* q, const S* k, const S* v, int64_t qt,
                       int64_t kt, int64_t vt, const S* drop, const S* p, const S* dy,
                       int64_t dyt, S* dq, S* dk, S* dv) {
  if constexpr (std::is_same_v<S, float>)
    backward_head_float(w, scale, q, k, v, qt, kt, vt, drop, p, dy, dyt, dq, dk, dv);
  else
    backward_head<S>(w, scale, q, k, v, qt, kt, vt, drop, p, dy, dyt, dq, dk, dv);
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
        HeadBuffers<scalar_t> buffers(T, D);
        for (int64_t bh = begin; bh < end; ++bh) {
          const int64_t b = bh / H, h = bh % H;
          forward_head_any<scalar_t>(buffers, scale, qp + lq.at(b, h, 0), kp + lk.at(b, h, 0),
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
    auto dq = at::empty({B, H, T, D}, q.options());
    auto dk = at::empty({B, H, T, D}, q.options());
    auto dv = at::empty({B, H, T, D}, q.options());
    const Layout lq(q), lk(k), lv(v);
    AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "causal_attention_backward", [&] {
      const auto scale = static_cast<scalar_t>(1.0 / std::sqrt(static_cast<double>(D)));
      const scalar_t *qp = q.data_ptr<scalar_t>(), *kp = k.data_ptr<scalar_t>(), *vp = v.data_ptr<scalar_t>();
      const scalar_t* dropp = drop.defined() ? drop.data_ptr<scalar_t>() : nullptr;
      const scalar_t *pp = p.data_ptr<scalar_t>(), *dyp = dy.data_ptr<scalar_t>();
      scalar_t *dqp = dq.data_ptr<scalar_t>(), *dkp = dk.data_ptr<scalar_t>(), *dvp = dv.data_ptr<scalar_t>();
      at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
        HeadBuffers<scalar_t> buffers(T, D);
        for (int64_t bh = begin; bh < end; ++bh) {
          const int64_t b = bh / H, h = bh % H;
          backward_head_any<scalar_t>(buffers, scale, qp + lq.at(b, h, 0), kp + lk.at(b, h, 0),
                                      vp + lv.at(b, h, 0), lq.t, lk.t, lv.t,
                                      dropp ? dropp + bh * T * T : nullptr, pp + bh * T * T,
                                      dyp + b * T * H * D + h * D, H * D, dqp + bh * T * D,
                                      dkp + bh * T * D, dvp + bh * T * D);
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
