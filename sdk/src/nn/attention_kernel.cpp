// The fused causal attention core and rotary embedding (induct/nn/attention.hpp:
// causal_attention, causal_attention_qkv, apply_rotary).
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
#include <array>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "induct/nn/attention.hpp"
#include "induct/nn/elementwise.hpp"
#include "simd_math.hpp"

namespace induct::nn {

namespace {

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
// head's into L2 while this one computes hides the cache misses that otherwise stall its first
// passes. Two traps, measured (microbenchmark, one head at 30 tokens, cold caches): GCC deleted
// loops of __builtin_prefetch (a call without side effects) in the forward and in most of the
// backward, so the prefetches are volatile asm; and into L1 (prefetcht0) they made a head slower
// than none (forward + backward 7.8 us against 6.8: the head's own buffers fill L1), into L2
// (prefetcht2) faster (5.9 us).
inline void prefetch_line(const void* p) {
#if defined(__x86_64__) && defined(__GNUC__)
  asm volatile("prefetcht2 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 1);
#endif
}

template <typename S>
inline void prefetch_rows(const S* x, int64_t stride, int64_t T, int64_t D) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; d += 64 / static_cast<int64_t>(sizeof(S)))
      prefetch_line(x + t * stride + d);
}

// C[r, c] = alpha sum_k A[r, k] B[k, c] for the rows r0 <= r < min(r0 + kRows, rows_end),
// k_begin <= k < k_end shared by the block, and the columns c_begin <= c < n (c_begin a whole
// number of vectors). A is row-major with stride lda, or, with a_columns, column-major
// (A[r, k] at a[k * lda + r]); B is [k][ldb], padded to whole vectors; C has stride ldc.
template <typename S, bool a_columns = false>
__attribute__((always_inline)) inline void block_product(int64_t r0, int64_t rows_end,
                                                         int64_t k_begin, int64_t k_end, const S* a,
                                                         int64_t lda, const S* b, int64_t ldb,
                                                         int64_t c_begin, int64_t n, S* c,
                                                         int64_t ldc, S alpha) {
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

// A short row (a head's D features): inlined into the kernels' clones as vector moves, where
// std::copy calls memmove once per row.
template <typename S>
__attribute__((always_inline)) inline void copy_row(const S* src, int64_t n, S* dst) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

// Rotary on T rows of a head (row t at x + t * xt, written to y + t * yt; y may be x): the pairs
// (i, i + rd/2) of the first rd features rotate by row t's angles in the [T][rd] tables, by
// their inverse when sign is -1; the other features are copied (when y is not x).
template <typename S>
__attribute__((always_inline)) inline void rotate_rows(int64_t T, int64_t D, int64_t rd, const S* x,
                                                       int64_t xt, const S* cos, const S* sin,
                                                       S sign, S* y, int64_t yt) {
  const int64_t half = rd / 2;
  for (int64_t t = 0; t < T; ++t) {
    const S* xr = x + t * xt;
    const S* c = cos + t * rd;
    const S* s = sin + t * rd;
    S* yr = y + t * yt;
#pragma omp simd
    for (int64_t i = 0; i < half; ++i) {  // each i reads and writes only i and i + half
      const S x1 = xr[i], x2 = xr[i + half];
      yr[i] = x1 * c[i] - sign * x2 * s[i];
      yr[i + half] = x2 * c[i + half] + sign * x1 * s[i + half];
    }
    if (yr != xr) copy_row(xr + rd, D - rd, yr + rd);
  }
}

// One (batch, head)'s operands: the rows of q, k and v with their strides; the rotary tables
// [T][rd] for q and k (rd 0: no rotary); the key-major [T][Tp] dropout mask (the kept elements
// scaled by 1 / (1 - p)) or null.
template <typename S>
struct HeadArgs {
  const S *q, *k, *v;
  int64_t qt, kt, vt;
  const S *cos, *sin;
  int64_t rd;
  const S* drop;
};

// The q, k and v rows of a head, as prefetch_rows.
template <typename S>
inline void prefetch_head(const HeadArgs<S>& h, int64_t T, int64_t D) {
  prefetch_rows(h.q, h.qt, T, D);
  prefetch_rows(h.k, h.kt, T, D);
  prefetch_rows(h.v, h.vt, T, D);
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
  // (Inlined, so that they are compiled for each clone of the kernels that call them.)
  // rows [T][Dp] from a strided source
  __attribute__((always_inline)) void rows(std::vector<S>& dst, const S* src, int64_t st) const {
    for (int64_t t = 0; t < T; ++t) copy_row(src + t * st, D, dst.data() + t * Dp);
  }
  // rows [T][Dp] from a strided source, rotated when the head has rotary tables
  __attribute__((always_inline)) void rotated_rows(std::vector<S>& dst, const S* src, int64_t st,
                                                   const HeadArgs<S>& h) const {
    if (h.rd == 0) return rows(dst, src, st);
    rotate_rows<S>(T, D, h.rd, src, st, h.cos, h.sin, S(1), dst.data(), Dp);
  }
  // transposed [D][Tp] from a strided source
  __attribute__((always_inline)) void columns(std::vector<S>& dst, const S* src, int64_t st) const {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) dst[d * Tp + t] = src[t * st + d];
  }
};

// Whether query i sees key j (and is a query, not padding).
inline bool seen(int64_t i, int64_t j, int64_t T) { return i >= j && i < T; }

// One (batch, head): p, the softmax weights, key-major [T][Tp] (0 where j > i and in the
// padding); y: rows of the output, stride yt.
template <typename S>
__attribute__((always_inline)) inline void forward_head(HeadBuffers<S>& w, S scale,
                                                        const HeadArgs<S>& h, S* p, S* y,
                                                        int64_t yt) {
  using V = Vec<S>;
  const int64_t T = w.T, D = w.D, Tp = w.Tp, Dp = w.Dp;
  const S* k = h.k;
  int64_t kt = h.kt;
  if (h.rd > 0) {  // q and k rotate on their way into the buffers
    w.rotated_rows(w.d, h.q, h.qt, h);
    w.columns(w.a, w.d.data(), Dp);
    w.rotated_rows(w.e, h.k, h.kt, h);
    k = w.e.data(), kt = Dp;
  } else {
    w.columns(w.a, h.q, h.qt);  // Q^T [D][Tp]
  }
  w.rows(w.b, h.v, h.vt);  // V [T][Dp]
  S* st = w.c.data();      // S^T, then the weights [T][Tp]
  // S^T = K Q^T, from each key's first vector of queries that can see it, over whole vectors
  // (Q^T's padding is 0, so the padding columns get 0; a partial vector's scalar stores were
  // 11% of this function).
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, 0, D, k, kt, w.a.data(), Tp, j0 / V::lanes * V::lanes, Tp, st, Tp,
                     scale);
  // Softmax down each query's column, a vector of queries at a time.
  for (int64_t c0 = 0; c0 < T; c0 += V::lanes) {
    const int64_t keys = std::min(T, c0 + V::lanes);
    S m[V::lanes], sum[V::lanes];
    for (int64_t l = 0; l < V::lanes; ++l) m[l] = -std::numeric_limits<S>::infinity();
    for (int64_t j = 0; j < keys; ++j) {
      const S* x = st + j * Tp + c0;
#pragma omp simd
      for (int64_t l = 0; l < V::lanes; ++l) m[l] = seen(c0 + l, j, T) && x[l] > m[l] ? x[l] : m[l];
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
  if (h.drop) {
#pragma omp simd
    for (int64_t x = 0; x < T * Tp; ++x) st[x] *= h.drop[x];
  }
  // Y = P V: a block of queries sums over the keys up to its last query.
  for (int64_t i0 = 0; i0 < T; i0 += kRows)
    block_product<S, true>(i0, T, 0, std::min(i0 + kRows, T), st, Tp, w.b.data(), Dp, 0, D, y, yt,
                           S(1));
}

// One (batch, head) backward: the rows of dq, dk and dv (strides dqt, dkt, dvt; every element
// written) from dy (stride dyt) and the forward's key-major p. With rotary, dq and dk are
// computed for the rotated q and k and rotated back.
template <typename S>
__attribute__((always_inline)) inline void backward_head(HeadBuffers<S>& w, S scale,
                                                         const HeadArgs<S>& h, const S* p,
                                                         const S* dy, int64_t dyt, S* dq,
                                                         int64_t dqt, S* dk, int64_t dkt, S* dv,
                                                         int64_t dvt) {
  using V = Vec<S>;
  const int64_t T = w.T, D = w.D, Tp = w.Tp, Dp = w.Dp;
  const S* drop = h.drop;
  w.columns(w.a, dy, dyt);                   // dY^T [D][Tp]
  S *ds = w.b.data(), *pd = w.c.data();      // dP^T then dS^T, and P^T with dropout, [T][Tp]
  w.rows(w.e, h.v, h.vt);                    // V [T][Dp]: contiguous rows for the broadcasts below
  for (int64_t j0 = 0; j0 < T; j0 += kRows)  // dP^T = V dY^T
    block_product<S>(j0, T, 0, D, w.e.data(), Dp, w.a.data(), Tp, j0 / V::lanes * V::lanes, Tp, ds,
                     Tp, S(1));
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
  w.rotated_rows(w.d, h.k, h.kt, h);
  for (int64_t i0 = 0; i0 < T; i0 += kRows)
    block_product<S, true>(i0, T, 0, std::min(i0 + kRows, T), ds, Tp, w.d.data(), Dp, 0, D, dq, dqt,
                           S(1));
  if (h.rd > 0) rotate_rows<S>(T, D, h.rd, dq, dqt, h.cos, h.sin, S(-1), dq, dqt);
  w.rotated_rows(w.d, h.q, h.qt, h);
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, j0, T, ds, Tp, w.d.data(), Dp, 0, D, dk, dkt, S(1));
  if (h.rd > 0) rotate_rows<S>(T, D, h.rd, dk, dkt, h.cos, h.sin, S(-1), dk, dkt);
  w.rows(w.e, dy, dyt);
  for (int64_t j0 = 0; j0 < T; j0 += kRows)
    block_product<S>(j0, T, j0, T, pd, Tp, w.e.data(), Dp, 0, D, dv, dvt, S(1));
}

// The float kernels, compiled for each vector width (target_clones does not apply to templates).
INDUCT_SIMD_CLONES void forward_head_float(HeadBuffers<float>& w, float scale,
                                           const HeadArgs<float>& h, float* p, float* y,
                                           int64_t yt) {
  forward_head<float>(w, scale, h, p, y, yt);
}

INDUCT_SIMD_CLONES void backward_head_float(HeadBuffers<float>& w, float scale,
                                            const HeadArgs<float>& h, const float* p,
                                            const float* dy, int64_t dyt, float* dq, int64_t dqt,
                                            float* dk, int64_t dkt, float* dv, int64_t dvt) {
  backward_head<float>(w, scale, h, p, dy, dyt, dq, dqt, dk, dkt, dv, dvt);
}

template <typename S>
void forward_head_any(HeadBuffers<S>& w, S scale, const HeadArgs<S>& h, S* p, S* y, int64_t yt) {
  if constexpr (std::is_same_v<S, float>)
    forward_head_float(w, scale, h, p, y, yt);
  else
    forward_head<S>(w, scale, h, p, y, yt);
}

template <typename S>
void backward_head_any(HeadBuffers<S>& w, S scale, const HeadArgs<S>& h, const S* p, const S* dy,
                       int64_t dyt, S* dq, int64_t dqt, S* dk, int64_t dkt, S* dv, int64_t dvt) {
  if constexpr (std::is_same_v<S, float>)
    backward_head_float(w, scale, h, p, dy, dyt, dq, dqt, dk, dkt, dv, dvt);
  else
    backward_head<S>(w, scale, h, p, dy, dyt, dq, dqt, dk, dkt, dv, dvt);
}

// The attention's operands: q, k and v as [B, H, T, D] tensors whose last dimension is
// contiguous (separate tensors, or views of one fused projection's output), the rotary tables
// ([T, rd] of their type, contiguous; undefined: no rotary), and what forward saves for backward.
struct Operands {
  at::Tensor q, k, v, cos, sin;
  at::Tensor p, drop;  // key-major softmax weights [B, H, T, Tp], and the dropout mask or undefined

  Operands(at::Tensor q_, at::Tensor k_, at::Tensor v_, at::Tensor cos_ = {}, at::Tensor sin_ = {})
      : q(std::move(q_)),
        k(std::move(k_)),
        v(std::move(v_)),
        cos(std::move(cos_)),
        sin(std::move(sin_)) {}

  template <typename S>
  HeadArgs<S> head(int64_t bh) const {
    const int64_t H = q.size(1), T = q.size(2), Tp = p.size(3);
    const int64_t b = bh / H, h = bh % H;
    const S* dp = drop.defined() ? drop.data_ptr<S>() + bh * T * Tp : nullptr;
    return {q.data_ptr<S>() + at(q, b, h),
            k.data_ptr<S>() + at(k, b, h),
            v.data_ptr<S>() + at(v, b, h),
            q.stride(2),
            k.stride(2),
            v.stride(2),
            cos.defined() ? cos.data_ptr<S>() : nullptr,
            sin.defined() ? sin.data_ptr<S>() : nullptr,
            cos.defined() ? cos.size(1) : 0,
            dp};
  }
  static int64_t at(const at::Tensor& x, int64_t b, int64_t h) {
    return b * x.stride(0) + h * x.stride(1);
  }
};

// Forward: fills o.p and o.drop, returns y [B, T, H * D] (heads merged).
at::Tensor attention_forward(Operands& o, double dropout, bool training) {
  const at::Tensor& q = o.q;
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3);
  const int64_t Tp =
      round_up(T, q.scalar_type() == at::kFloat ? Vec<float>::lanes : Vec<double>::lanes);
  o.p = at::empty({B, H, T, Tp}, q.options());  // key-major, padded: [b, h, key, query]
  o.drop = at::Tensor();
  if (training && dropout > 0) {
    if (q.scalar_type() == at::kFloat) {  // the SDK's dropout mask
      o.drop = at::empty({B, H, T, Tp}, q.options());
      dropout_mask(draw_seed(), dropout, o.drop.numel(), o.drop.data_ptr<float>());
    } else {  // LibTorch's draws, as its dropout on [B, H, query, key] (tests compare with it)
      auto draws = at::empty({B, H, T, T}, q.options()).bernoulli_(1 - dropout).div_(1 - dropout);
      o.drop = at::zeros({B, H, T, Tp}, q.options());
      o.drop.narrow(3, 0, T).copy_(draws.transpose(2, 3));
    }
  }
  auto y = at::empty({B, T, H * D}, q.options());  // heads merged: [B, T, H, D]
  AT_DISPATCH_FLOATING_TYPES(q.scalar_type(), "causal_attention", [&] {
    const auto scale = static_cast<scalar_t>(1.0 / std::sqrt(static_cast<double>(D)));
    scalar_t *pp = o.p.data_ptr<scalar_t>(), *yp = y.data_ptr<scalar_t>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
      HeadBuffers<scalar_t> buffers(T, D);
      for (int64_t bh = begin; bh < end; ++bh) {
        if (bh + 1 < end) prefetch_head(o.head<scalar_t>(bh + 1), T, D);
        forward_head_any<scalar_t>(buffers, scale, o.head<scalar_t>(bh), pp + bh * T * Tp,
                                   yp + bh / H * T * H * D + bh % H * D, H * D);
      }
    });
  });
  return y;
}

// Backward: dy [B, T, H * D] contiguous; dq, dk, dv: [B, H, T, D] tensors (or views) to fill.
void attention_backward(const Operands& o, const at::Tensor& dy, at::Tensor& dq, at::Tensor& dk,
                        at::Tensor& dv) {
  const int64_t B = o.q.size(0), H = o.q.size(1), T = o.q.size(2), D = o.q.size(3),
                Tp = o.p.size(3);
  AT_DISPATCH_FLOATING_TYPES(o.q.scalar_type(), "causal_attention_backward", [&] {
    const auto scale = static_cast<scalar_t>(1.0 / std::sqrt(static_cast<double>(D)));
    const scalar_t *pp = o.p.data_ptr<scalar_t>(), *dyp = dy.data_ptr<scalar_t>();
    scalar_t *dqp = dq.data_ptr<scalar_t>(), *dkp = dk.data_ptr<scalar_t>(),
             *dvp = dv.data_ptr<scalar_t>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
      HeadBuffers<scalar_t> buffers(T, D);
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / H, h = bh % H;
        if (bh + 1 < end) {
          prefetch_head(o.head<scalar_t>(bh + 1), T, D);
          prefetch_rows(dyp + (bh + 1) / H * T * H * D + (bh + 1) % H * D, H * D, T, D);
          prefetch_rows(pp + (bh + 1) * T * Tp, Tp, T, Tp);
        }
        backward_head_any<scalar_t>(
            buffers, scale, o.head<scalar_t>(bh), pp + bh * T * Tp, dyp + b * T * H * D + h * D,
            H * D, dqp + Operands::at(dq, b, h), dq.stride(2), dkp + Operands::at(dk, b, h),
            dk.stride(2), dvp + Operands::at(dv, b, h), dv.stride(2));
      }
    });
  });
}

at::Tensor saved_or_undefined(torch::autograd::AutogradContext* ctx, const std::string& key) {
  const auto& value = ctx->saved_data[key];
  return value.isTensor() ? value.toTensor() : at::Tensor();
}

// q, k and v as separate tensors.
class FusedAttention : public torch::autograd::Function<FusedAttention> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& q, const at::Tensor& k,
                                                const at::Tensor& v, double dropout,
                                                bool training) {
    Operands o(q, k, v);
    auto y = attention_forward(o, dropout, training);
    ctx->save_for_backward({q, k, v});
    ctx->saved_data["p"] = o.p;
    ctx->saved_data["drop"] = o.drop;
    return {y};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    Operands o(saved[0], saved[1], saved[2]);
    o.p = ctx->saved_data["p"].toTensor();
    o.drop = saved_or_undefined(ctx, "drop");
    auto dq = at::empty(o.q.sizes(), o.q.options());
    auto dk = at::empty(o.q.sizes(), o.q.options());
    auto dv = at::empty(o.q.sizes(), o.q.options());
    attention_backward(o, grads[0].contiguous(), dq, dk, dv);
    return {dq, dk, dv, at::Tensor(), at::Tensor()};
  }
};

// q, k and v ([B, H, T, D] views) in the fused projection's output [B, T, 3 * H * D].
std::array<at::Tensor, 3> split_qkv(const at::Tensor& qkv, int64_t H) {
  const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(2) / (3 * H);
  auto parts = qkv.view({B, T, 3, H, D}).permute({2, 0, 3, 1, 4});
  return {parts[0], parts[1], parts[2]};
}

// The fused projection's output as one tensor, rotary included: its gradient is one tensor
// written in place by the kernel (no split, rotary or stacking of the three gradients as
// separate operations).
class FusedQkvAttention : public torch::autograd::Function<FusedQkvAttention> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& qkv,
                            const c10::optional<at::Tensor>& cos,
                            const c10::optional<at::Tensor>& sin, int64_t heads, double dropout,
                            bool training) {
    auto [q, k, v] = split_qkv(qkv, heads);
    Operands o(q, k, v, cos ? *cos : at::Tensor(), sin ? *sin : at::Tensor());
    auto y = attention_forward(o, dropout, training);
    ctx->save_for_backward({qkv});
    ctx->saved_data["cos"] = o.cos;
    ctx->saved_data["sin"] = o.sin;
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["p"] = o.p;
    ctx->saved_data["drop"] = o.drop;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto qkv = ctx->get_saved_variables()[0];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    auto [q, k, v] = split_qkv(qkv, heads);
    Operands o(q, k, v, saved_or_undefined(ctx, "cos"), saved_or_undefined(ctx, "sin"));
    o.p = ctx->saved_data["p"].toTensor();
    o.drop = saved_or_undefined(ctx, "drop");
    auto dqkv = at::empty(qkv.sizes(), qkv.options());
    auto [dq, dk, dv] = split_qkv(dqkv, heads);
    attention_backward(o, grads[0].contiguous(), dq, dk, dv);
    return {dqkv, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Rotary on one [T, D] row block of a head, y contiguous (the SDK's apply_rotary).
INDUCT_SIMD_CLONES void rotary_head(int64_t T, int64_t D, int64_t rd, const float* x, int64_t xt,
                                    const float* cos, const float* sin, float* y, bool inverse) {
  rotate_rows<float>(T, D, rd, x, xt, cos, sin, inverse ? -1.0f : 1.0f, y, D);
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
    const float *xp = x.data_ptr<float>(), *cp = cos.data_ptr<float>(), *sp = sin.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
      for (int64_t bh = begin; bh < end; ++bh)
        rotary_head(T, D, rd, xp + Operands::at(x, bh / H, bh % H), x.stride(2), cp, sp,
                    yp + bh * T * D, inverse);
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
  auto rot = x.narrow(-1, 0, rd);  // [B, H, T, rd]
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

bool fusable_types(const at::Tensor& x) {
  return x.device().is_cpu() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble);
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
  if (!fused || !fusable_types(q) || !fusable_types(k) || !fusable_types(v) ||
      q.scalar_type() != k.scalar_type() || q.scalar_type() != v.scalar_type())
    return attention_by_ops(q, k, v, dropout, training);
  auto last_contiguous = [](const at::Tensor& x) { return x.stride(3) == 1 ? x : x.contiguous(); };
  return FusedAttention::apply(last_contiguous(q), last_contiguous(k), last_contiguous(v), dropout,
                               training)[0];
}

at::Tensor causal_attention_qkv(const at::Tensor& qkv, int64_t heads, double dropout, bool training,
                                const at::Tensor& cos, const at::Tensor& sin) {
  TORCH_CHECK(qkv.dim() == 3 && heads > 0 && qkv.size(2) % (3 * heads) == 0,
              "causal_attention_qkv: qkv must be [B, T, 3 * heads * head_dim]");
  TORCH_CHECK(cos.defined() == sin.defined(),
              "causal_attention_qkv: give both rotary tables or neither");
  const int64_t T = qkv.size(1), D = qkv.size(2) / (3 * heads);
  if (cos.defined())
    TORCH_CHECK(cos.dim() == 2 && cos.sizes() == sin.sizes() && cos.size(0) >= T &&
                    cos.size(1) % 2 == 0 && cos.size(1) <= D,
                "causal_attention_qkv: rotary tables must be [>= T, even rotary_dim <= head_dim]");
  if (!fusable_types(qkv)) {
    auto [q, k, v] = split_qkv(qkv, heads);
    if (cos.defined()) q = apply_rotary(q, cos, sin), k = apply_rotary(k, cos, sin);
    return attention_by_ops(q, k, v, dropout, training);
  }
  c10::optional<at::Tensor> c, s;
  if (cos.defined()) {
    c = cos.slice(0, 0, T).to(qkv.scalar_type()).contiguous();
    s = sin.slice(0, 0, T).to(qkv.scalar_type()).contiguous();
  }
  return FusedQkvAttention::apply(qkv.contiguous(), c, s, heads, dropout, training);
}

}  // namespace induct::nn
