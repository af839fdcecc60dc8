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
// or 32 in the small models) around a softmax. Dot products along D and softmax sums along a
// query's row end in a horizontal sum per row or pair (GCC spills such sums to the stack and
// adds them one by one), and row updates through memory chain stores to loads: the first
// version of these loops ran at a few GFLOP/s. Here the scores are kept key-major (S^T: one
// row per key, the queries along it), so that the softmax of 16 queries at once is vertical
// vector arithmetic over the keys; every product keeps its accumulators in vector registers
// (GCC's generic vectors of 64 bytes: one AVX-512 register, two AVX2 ones), runs along a
// contiguous dimension of a zero-padded per-head copy of its operands, and works on kRows rows
// at once so that the FMA chains overlap.
//
// (The vectors never cross a call that is not inlined, so the ABI note GCC gives for 64-byte
// vectors in the clones without AVX-512 does not apply.)
#pragma GCC diagnostic ignored "-Wpsabi"
template <typename S>
struct Vec {
  typedef S type __attribute__((vector_size(64)));
  typedef S unaligned __attribute__((vector_size(64), aligned(sizeof(S)), may_alias));
  static constexpr int64_t lanes = 64 / sizeof(S);
  static type load(const S* p) { return *reinterpret_cast<const unaligned*>(p); }
  static void store(S* p, const type& v) { *reinterpret_cast<unaligned*>(p) = v; }
  static type zero() { return type{}; }
};

constexpr int64_t kRows = 4;

inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// The rows of a head are scattered (a row of [B, T, 3, heads, D] per token): fetching the next
// head's while this one computes hides the cache misses that otherwise stall its first pass.
template <typename S>
inline void prefetch_rows(const S* x, int64_t stride, int64_t T, int64_t D) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; d += 64 / static_cast<int64_t>(sizeof(S)))
      __builtin_prefetch(x + t * stride + d);
}

// The q, k and v rows of head bh (flattened batch x heads), as prefetch_rows.
template <typename S>
inline void prefetch_head(int64_t bh, int64_t H, int64_t T, int64_t D, const S* q, const Layout& lq,
                          const S* k, const Layout& lk, const S* v, const Layout& lv) {
  const int64_t b = bh / H, h = bh % H;
  prefetch_rows(q + lq.at(b, h, 0), lq.t, T, D);
  prefetch_rows(k + lk.at(b, h, 0), lk.t, T, D);
  prefetch_rows(v + lv.at(b, h, 0), lv.t, T, D);
}

// C[r, c] = alpha sum_k A[r, k] B[k, c] for the rows r0 <= r < min(r0 + kRows, rows_end),
// k_begin <= k < k_end shared by the block, and the columns c_begin <= c < n (c_begin a whole
// number of vectors). A is row-major with stride lda, or, with a_columns, column-major
// (A[r, k] at a[k * lda + r]); B is [k][ldb], padded to whole vectors; C has stride ldc.
template <typename S, bool a_columns = false>
__attribute__((always_inline)) inline void block_product(int64_t r0, int64_t rows_end, int64_t k_begin,
                                                         int64_t k_end, const S* a, int64_t lda,
                                                         const S* b, int64_t ldb, int64_t c_begin,
                                                         int64_t n, S* c, int64_t ldc, S alpha) {
  using V = Vec<S>;
  const int64_t rows = std::min(kRows, rows_end - r0);
  int64_t row_of[kRows];  // rows past the end repeat the first (computed, not stored)
  for (int64_t r = 0; r < kRows; ++r) row_of[r] = r0 + (r < rows ? r : 0);
  for (int64_t c0 = c_begin; c0 < n; c0 += V::lanes) {
    typename V::type acc[kRows];
    for (int64_t r = 0; r < kRows; ++r) acc[r] = V::zero();
    for (int64_t k = k_begin; k < k_end; ++k) {
      const auto bk = V::load(b + k * ldb + c0);
      for (int64_t r = 0; r < kRows; ++r)
        acc[r] += (a_columns ? a[k * lda + row_of[r]] : a[row_of[r] * lda + k]) * bk;
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

// Per-thread copies of one head's operands, padded to whole vectors. Every buffer is zeroed
// once; each head then writes the same positions, so the padding stays 0.
template <typename S>
struct HeadBuffers {
  int64_t T, D, Tp, Dp;
  std::vector<S> a, b, c, d, e;
  HeadBuffers(int64_t T_, int64_t D_)
      : T(T_), D(D_), Tp(round_up(T_, Vec<S>::lanes)), Dp(round_up(D_, Vec<S>::lanes)) {
    const auto n = static_cast<size_t>(std::max(T * Tp, std::max(D * Tp, T * Dp)));
    for (auto* buffer : {&a, &b, &c, &d, &e}) buffer->assign(n, S(0));
  }
  // rows [T][Dp] from a strided source
  void rows(std::vector<S>& dst, const S* src, int64_t st) const {
    for (int64_t t = 0; t < T; ++t) std::copy(src + t * st, src + t * st + D, dst.data() + t * Dp);
  }
  // transposed [D][Tp] from a strided source
  void columns(std::vector<S>& dst, const S* src, int64_t st) const {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) dst[d * Tp + t] = src[t * st + d];
  }
};

// Whether query i sees key j (and is a query, not padding).
inline bool seen(int64_t i, int64_t j, int64_t T) { return i >= j && i < T; }

// One (batch, head). Key-major [T][Tp] buffers: p (the softmax weights out, 0 where j > i and
// in the padding), drop (the kept mask scaled by 1 / (1 - p), or null); y: rows of the
// output, stride yt.
template <typename S>
__attribute__((always_inline)) inline void forward_head(HeadBuffers<S>& w, S scale, const S* q,
                                                        const S* k, const S* v, int64_t qt,
                                                        int64_t kt, int64_t vt, const S* drop,
                                                        S* p, S* y, int64_t yt) {
  using V = Vec<S>;
  const int64_t T = w.T, D = w.D, Tp = w.Tp, Dp = w.Dp;
  w.columns(w.a, q, qt);  // Q^T [D][Tp]
  w.rows(w.b, v, vt);     // V [T][Dp]
  S* st = w.c.data();     // S^T, then the weights [T][Tp]
  // S^T = K Q^T, from each key's first vector of queries that can see it.
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, 0, D, k, kt, w.a.data(), Tp, j0 / V::lanes * V::lanes, T, st, Tp, scale);
  // Softmax down each query's column, a vector of queries at a time.
  for (int64_t c0 = 0; c0 < T; c0 += V::lanes) {
    const int64_t keys = std::min(T, c0 + V::lanes);
    S m[V::lanes], sum[V::lanes];
    for (int64_t l = 0; l < V::lanes; ++l) m[l] = -std::numeric_limits<S>::infinity();
    for (int64_t j = 0; j < keys; ++j) {
      const S* x = st + j * Tp + c0;
#pragma omp simd
      for (int64_t l = 0; l < V::lanes; ++l)
        m[l] = seen(c0 + l, j, T) && x[l] > m[l] ? x[l] : m[l];
    }
    for (int64_t l = 0; l < V::lanes; ++l) sum[l] = 0;
    for (int64_t j = 0; j < keys; ++j) {
      S* x = st + j * Tp + c0;
#pragma omp simd
      for (int64_t l = 0; l < V::lanes; ++l) {
        const S e = simd::exp_approx(x[l] - m[l]);  // finite for any x, m (exp_approx clamps)
        x[l] = seen(c0 + l, j, T) ? e : S(0);
        sum[l] += x[l];
      }
    }
#pragma omp simd
    for (int64_t l = 0; l < V::lanes; ++l) sum[l] = sum[l] > 0 ? S(1) / sum[l] : S(0);
    for (int64_t j = 0; j < keys; ++j) {
      S* x = st + j * Tp + c0;
#pragma omp simd
      for (int64_t l = 0; l < V::lanes; ++l) x[l] *= sum[l];
    }
  }
  std::copy(st, st + T * Tp, p);
  if (drop) {
#pragma omp simd
    for (int64_t x = 0; x < T * Tp; ++x) st[x] *= drop[x];
  }
  // Y = P V: a block of queries sums over the keys up to its last query.
  for (int64_t i0 = 0; i0 < T; i0 += kRows)
    block_product<S, true>(i0, T, 0, std::min(i0 + kRows, T), st, Tp, w.b.data(), Dp, 0, D, y, yt, S(1));
}

// One (batch, head) backward: dq, dk, dv ([T, D] contiguous, every element written) from dy
// (stride dyt) and the forward's key-major p and drop.
template <typename S>
__attribute__((always_inline)) inline void backward_head(HeadBuffers<S>& w, S scale, const S* q,
                                                         const S* k, const S* v, int64_t qt,
                                                         int64_t kt, int64_t vt, const S* drop,
                                                         const S* p, const S* dy, int64_t dyt,
                                                         S* dq, S* dk, S* dv) {
  using V = Vec<S>;
  const int64_t T = w.T, D = w.D, Tp = w.Tp, Dp = w.Dp;
  w.columns(w.a, dy, dyt);  // dY^T [D][Tp]
  S *ds = w.b.data(), *pd = w.c.data();  // dP^T then dS^T, and P^T with dropout, [T][Tp]
  for (int64_t j0 = 0; j0 < T; j0 += kRows)  // dP^T = V dY^T
    block_product<S>(j0, T, 0, D, v, vt, w.a.data(), Tp, j0 / V::lanes * V::lanes, T, ds, Tp, S(1));
  // dS = P (dP - rowdot) down each query's column; dP through the dropout mask.
  for (int64_t c0 = 0; c0 < T; c0 += V::lanes) {
    const int64_t keys = std::min(T, c0 + V::lanes);
    S rowdot[V::lanes];
    for (int64_t l = 0; l < V::lanes; ++l) rowdot[l] = 0;
    for (int64_t j = 0; j < keys; ++j) {
      const S* pj = p + j * Tp + c0;  // 0 where key j is not seen
      S* dpj = ds + j * Tp + c0;
      S* pdj = pd + j * Tp + c0;
      const S* keep = drop ? drop + j * Tp + c0 : nullptr;
#pragma omp simd
      for (int64_t l = 0; l < V::lanes; ++l) {
        const S g = seen(c0 + l, j, T) ? dpj[l] * (keep ? keep[l] : S(1)) : S(0);
        dpj[l] = g;
        pdj[l] = pj[l] * (keep ? keep[l] : S(1));
        rowdot[l] += g * pj[l];
      }
    }
    for (int64_t j = 0; j < keys; ++j) {
      const S* pj = p + j * Tp + c0;
      S* dsj = ds + j * Tp + c0;
#pragma omp simd
      for (int64_t l = 0; l < V::lanes; ++l) dsj[l] = pj[l] * (dsj[l] - rowdot[l]) * scale;
    }
  }
  // dQ = dS K reads dS^T by columns; dK = dS^T Q and dV = (P^T with dropout) dY by rows, from
  // each key on (0 before it).
  w.rows(w.d, k, kt);
  for (int64_t i0 = 0; i0 < T; i0 += kRows)
    block_product<S, true>(i0, T, 0, std::min(i0 + kRows, T), ds, Tp, w.d.data(), Dp, 0, D, dq, D, S(1));
  w.rows(w.d, q, qt);
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, j0, T, ds, Tp, w.d.data(), Dp, 0, D, dk, D, S(1));
  w.rows(w.e, dy, dyt);
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, j0, T, pd, Tp, w.e.data(), Dp, 0, D, dv, D, S(1));
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
    const int64_t Tp = round_up(T, q.scalar_type() == at::kFloat ? Vec<float>::lanes : Vec<double>::lanes);
    auto p = at::empty({B, H, T, Tp}, q.options());  // key-major, padded: [b, h, key, query]
    at::Tensor drop;
    if (training && dropout > 0) {
      if (q.scalar_type() == at::kFloat) {  // the SDK's dropout mask
        drop = at::empty({B, H, T, Tp}, q.options());
        dropout_mask(draw_seed(), dropout, drop.numel(), drop.data_ptr<float>());
      } else {  // LibTorch's draws, as its dropout on [B, H, query, key] (tests compare with it)
        auto draws = at::empty({B, H, T, T}, q.options()).bernoulli_(1 - dropout).div_(1 - dropout);
        drop = at::zeros({B, H, T, Tp}, q.options());
        drop.narrow(3, 0, T).copy_(draws.transpose(2, 3));
      }
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
          if (bh + 1 < end) prefetch_head(bh + 1, H, T, D, qp, lq, kp, lk, vp, lv);
          forward_head_any<scalar_t>(buffers, scale, qp + lq.at(b, h, 0), kp + lk.at(b, h, 0),
                                     vp + lv.at(b, h, 0), lq.t, lk.t, lv.t,
                                     dp ? dp + bh * T * Tp : nullptr, pp + bh * T * Tp,
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
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), Tp = p.size(3);
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
          if (bh + 1 < end) {
            prefetch_head(bh + 1, H, T, D, qp, lq, kp, lk, vp, lv);
            prefetch_rows(dyp + (bh + 1) / H * T * H * D + (bh + 1) % H * D, H * D, T, D);
          }
          backward_head_any<scalar_t>(buffers, scale, qp + lq.at(b, h, 0), kp + lk.at(b, h, 0),
                                      vp + lv.at(b, h, 0), lq.t, lk.t, lv.t,
                                      dropp ? dropp + bh * T * Tp : nullptr, pp + bh * T * Tp,
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
