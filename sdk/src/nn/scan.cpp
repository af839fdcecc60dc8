#include "induct/nn/scan.hpp"

#include <ATen/Dispatch.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "batch_chunks.hpp"
#include "simd_math.hpp"

namespace induct::nn {

torch::Tensor selective_scan_reference(const torch::Tensor& x, const torch::Tensor& delta,
                                       const torch::Tensor& A, const torch::Tensor& Bm,
                                       const torch::Tensor& C, const torch::Tensor& D) {
  const int64_t batch = x.size(0), Di = x.size(2), N = A.size(1);
  auto h = torch::zeros({batch, Di, N}, x.options());  // [B, Di, N]
  // unbind, not select(t): select on a tensor that requires grad adds a full-size zero
  // gradient per step in backward (quadratic in T).
  auto xs = x.unbind(1), ds = delta.unbind(1), bs = Bm.unbind(1), cs = C.unbind(1);
  std::vector<torch::Tensor> ys;
  ys.reserve(xs.size());
  for (size_t t = 0; t < xs.size(); ++t) {
    auto decay = torch::exp(ds[t].unsqueeze(-1) * A);                 // [B, Di, N]
    auto drive = (ds[t] * xs[t]).unsqueeze(-1) * bs[t].unsqueeze(1);  // [B, Di, N]
    h = decay * h + drive;
    ys.push_back(torch::bmm(h, cs[t].unsqueeze(-1)).squeeze(-1));  // [B, Di]
  }
  return torch::stack(ys, 1) + x * D;  // [B, T, Di]
}

torch::Tensor selective_scan_reference(const torch::Tensor& x, const torch::Tensor& delta,
                                       const torch::Tensor& A, const torch::Tensor& Bm,
                                       const torch::Tensor& C, const torch::Tensor& D,
                                       const ScanOptions& options) {
  auto dt = options.delta_bias.defined() ? delta + options.delta_bias : delta;
  if (options.delta_softplus) dt = torch::softplus(dt);
  auto y = selective_scan_reference(x, dt, A, Bm, C, D);
  return options.z.defined() ? y * torch::silu(options.z) : y;
}

namespace {

// Raw views of the contiguous inputs.
template <class T>
struct ScanArgs {
  int64_t batch, steps, channels, states;
  const T *x, *delta, *A, *B, *C, *D;
  int64_t at(int64_t b, int64_t t, int64_t d) const { return (b * steps + t) * channels + d; }
  const T* row_B(int64_t b, int64_t t) const { return B + (b * steps + t) * states; }
  const T* row_C(int64_t b, int64_t t) const { return C + (b * steps + t) * states; }
};

// The recurrence is independent across (batch, channel) pairs: each walks time with its state,
// one row of `states` numbers, in L1, and computes its decays exp(delta * A) in the same
// vectorised loop (one pass; no [B, Di, N] tensors, no separate exp over a row). Only C's
// contraction (forward) and the sums over channels of B's and C's gradients (backward) couple
// the channels of one batch index.

// The forward runs kLanes channels side by side, one per vector lane. The backward processes
// a row of states kLanes at a time (the node pads the states to a multiple of it) and keeps
// each sum over the row as kLanes partial sums that lane_sum adds as a tree: an omp simd
// reduction over the row instead spilled its vector to the stack and added it one lane at a
// time (half of the forward, when the forward still summed over states).
constexpr int64_t kLanes = 16;

template <class T>
__attribute__((always_inline)) inline T lane_sum(T* acc) {
  static_assert(kLanes == 16);
  for (int l = 0; l < 8; ++l) acc[l] += acc[l + 8];
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  for (int l = 0; l < 2; ++l) acc[l] += acc[l + 2];
  return acc[0] + acc[1];
}

// Forward of batch indices [begin, end): y[b, t, d] for every t and d. Unlike backward it runs
// kLanes channels side by side, one per vector lane, walking the states one at a time (decays
// from At, A transposed to [channel blocks, states, kLanes], zero beyond the last channel): C's
// contraction over states is then a sum of vectors, with no sum across lanes per (t, channel).
// h: [states, kLanes] scratch.
template <class T>
__attribute__((always_inline)) inline void forward_batches(const ScanArgs<T>& a, const T* At,
                                                           int64_t begin, int64_t end, T* h, T* y) {
  const int64_t S = a.states, Di = a.channels;
  for (int64_t b = begin; b < end; ++b) {
    for (int64_t d0 = 0; d0 < Di; d0 += kLanes) {
      const int64_t width = std::min(kLanes, Di - d0);
      const T* Ab = At + d0 * S;
      std::fill(h, h + S * kLanes, T(0));
      for (int64_t t = 0; t < a.steps; ++t) {
        const int64_t i = a.at(b, t, d0);
        const T *Bt = a.row_B(b, t), *Ct = a.row_C(b, t);
        // This step's inputs of the block (0 past the last channel: no drive, decay 1).
        T dt[kLanes] = {}, xv[kLanes] = {}, drive[kLanes], acc[kLanes] = {};
        if (width == kLanes) {
#pragma omp simd
          for (int64_t l = 0; l < kLanes; ++l) dt[l] = a.delta[i + l], xv[l] = a.x[i + l];
        } else {
          std::copy(a.delta + i, a.delta + i + width, dt);
          std::copy(a.x + i, a.x + i + width, xv);
        }
#pragma omp simd
        for (int64_t l = 0; l < kLanes; ++l) drive[l] = dt[l] * xv[l];
        for (int64_t n = 0; n < S; ++n) {
          const T bn = Bt[n], cn = Ct[n];
          const T* An = Ab + n * kLanes;
          T* hn = h + n * kLanes;
#pragma omp simd
          for (int64_t l = 0; l < kLanes; ++l) {
            const T v = simd::exp_approx(dt[l] * An[l]) * hn[l] + drive[l] * bn;
            hn[l] = v;
            acc[l] += cn * v;
          }
        }
        for (int64_t l = 0; l < width; ++l) y[i + l] = acc[l] + a.D[d0 + l] * xv[l];
      }
    }
  }
}

// Scratch of one thread's backward: the states and decays of one (batch, channel) for every
// step, the state gradient, the channel's A gradient, and h_0 = 0.
template <class T>
struct BackwardScratch {
  std::vector<T> hs, es, gh, gA, zeros;
  BackwardScratch(int64_t steps, int64_t states)
      : hs(steps * states), es(steps * states), gh(states), gA(states), zeros(states, T(0)) {}
};

// Reverse mode through the recurrence for batch indices [begin, end): recompute one channel's
// states and decays, then walk back carrying dL/dh. gB and gC (one row per (b, t)) sum over
// channels; gA and gD (sums over the batch) go to this chunk's own rows gA_part, gD_part.
template <class T>
__attribute__((always_inline)) inline void backward_batches(const ScanArgs<T>& a, int64_t begin,
                                                            int64_t end, const T* gy, T* gx,
                                                            T* gdelta, T* gA_part, T* gB, T* gC,
                                                            T* gD_part, BackwardScratch<T>& w) {
  const int64_t S = a.states, steps = a.steps;
  for (int64_t b = begin; b < end; ++b) {
    for (int64_t d = 0; d < a.channels; ++d) {
      const T* Ad = a.A + d * S;
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t i = a.at(b, t, d);
        const T dt = a.delta[i], drive = dt * a.x[i];
        const T* Bt = a.row_B(b, t);
        const T* previous = t > 0 ? w.hs.data() + (t - 1) * S : w.zeros.data();
        T* h = w.hs.data() + t * S;
        T* e = w.es.data() + t * S;
#pragma omp simd
        for (int64_t n = 0; n < S; ++n) {
          e[n] = simd::exp_approx(dt * Ad[n]);
          h[n] = e[n] * previous[n] + drive * Bt[n];
        }
      }
      std::fill(w.gh.begin(), w.gh.end(), T(0));
      std::fill(w.gA.begin(), w.gA.end(), T(0));
      T* gh = w.gh.data();
      T* gAd = w.gA.data();
      T gDd = 0;
      for (int64_t t = steps - 1; t >= 0; --t) {
        const int64_t i = a.at(b, t, d);
        const T g = gy[i], dt = a.delta[i], xv = a.x[i], dtx = dt * xv;
        const T *Bt = a.row_B(b, t), *Ct = a.row_C(b, t);
        T* gBt = gB + (b * steps + t) * S;
        T* gCt = gC + (b * steps + t) * S;
        const T* h = w.hs.data() + t * S;
        const T* e = w.es.data() + t * S;
        const T* previous = t > 0 ? w.hs.data() + (t - 1) * S : w.zeros.data();
        gDd += g * xv;
        // h_t = e * h_{t-1} + dt * x * B with e = exp(dt * A); y_t = C . h_t + D x.
        // s = sum dL/dh_t B (for x's and dt's gradients), r = sum A dL/dh_t e h_{t-1} (dt's).
        T s_acc[kLanes] = {}, r_acc[kLanes] = {};
        for (int64_t n0 = 0; n0 < S; n0 += kLanes) {
#pragma omp simd
          for (int64_t l = 0; l < kLanes; ++l) {
            const int64_t n = n0 + l;
            const T ghn = gh[n] + g * Ct[n];
            gCt[n] += g * h[n];
            s_acc[l] += ghn * Bt[n];
            const T q = ghn * e[n] * previous[n];
            r_acc[l] += Ad[n] * q;
            gAd[n] += dt * q;
            gBt[n] += dtx * ghn;
            gh[n] = ghn * e[n];
          }
        }
        const T s = lane_sum(s_acc);
        gx[i] = g * a.D[d] + dt * s;
        gdelta[i] = lane_sum(r_acc) + xv * s;
      }
      T* gA_row = gA_part + d * S;
      for (int64_t n = 0; n < S; ++n) gA_row[n] += gAd[n];
      gD_part[d] += gDd;
    }
  }
}

// The float kernels, compiled for each vector width (target_clones does not apply to templates).
INDUCT_SIMD_CLONES void forward_batches_float(const ScanArgs<float>& a, const float* At,
                                              int64_t begin, int64_t end, float* h, float* y) {
  forward_batches<float>(a, At, begin, end, h, y);
}

INDUCT_SIMD_CLONES void backward_batches_float(const ScanArgs<float>& a, int64_t begin, int64_t end,
                                               const float* gy, float* gx, float* gdelta,
                                               float* gA_part, float* gB, float* gC, float* gD_part,
                                               BackwardScratch<float>& w) {
  backward_batches<float>(a, begin, end, gy, gx, gdelta, gA_part, gB, gC, gD_part, w);
}

template <class T>
void scan_forward(const ScanArgs<T>& a, T* y) {
  const int64_t S = a.states, blocks = (a.channels + kLanes - 1) / kLanes;
  std::vector<T> At(blocks * S * kLanes, T(0));  // At[block][n][lane] = A[block kLanes + lane][n]
  for (int64_t d = 0; d < a.channels; ++d)
    for (int64_t n = 0; n < S; ++n)
      At[((d / kLanes) * S + n) * kLanes + d % kLanes] = a.A[d * S + n];
  BatchChunks(a.batch).run([&](int64_t, int64_t begin, int64_t end) {
    std::vector<T> h(S * kLanes);
    if constexpr (std::is_same_v<T, float>)
      forward_batches_float(a, At.data(), begin, end, h.data(), y);
    else
      forward_batches<T>(a, At.data(), begin, end, h.data(), y);
  });
}

// gA_parts, gD_parts: one zeroed row of [Di, N] and [Di] per chunk, summed by the caller.
template <class T>
void scan_backward(const ScanArgs<T>& a, const T* gy, T* gx, T* gdelta, T* gA_parts, T* gB, T* gC,
                   T* gD_parts) {
  BatchChunks(a.batch).run([&](int64_t chunk, int64_t begin, int64_t end) {
    BackwardScratch<T> w(a.steps, a.states);
    T* gA_part = gA_parts + chunk * a.channels * a.states;
    T* gD_part = gD_parts + chunk * a.channels;
    if constexpr (std::is_same_v<T, float>)
      backward_batches_float(a, begin, end, gy, gx, gdelta, gA_part, gB, gC, gD_part, w);
    else
      backward_batches<T>(a, begin, end, gy, gx, gdelta, gA_part, gB, gC, gD_part, w);
  });
}

template <class T>
ScanArgs<T> args_of(const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& A,
                    const torch::Tensor& Bm, const torch::Tensor& C, const torch::Tensor& D) {
  return {x.size(0),           x.size(1),       x.size(2),        A.size(1),       x.data_ptr<T>(),
          delta.data_ptr<T>(), A.data_ptr<T>(), Bm.data_ptr<T>(), C.data_ptr<T>(), D.data_ptr<T>()};
}

// The options' passes around the kernel, over [rows, Di] arrays (rows = B T).

// dt = delta + bias, through softplus when `softplus`.
template <class T>
__attribute__((always_inline)) inline void step_sizes(int64_t begin, int64_t end, int64_t Di,
                                                      const T* delta, const T* bias, bool softplus,
                                                      T* dt) {
  for (int64_t r = begin; r < end; ++r) {
    const T* in = delta + r * Di;
    T* out = dt + r * Di;
    if (softplus) {
#pragma omp simd
      for (int64_t d = 0; d < Di; ++d)
        out[d] = simd::softplus_approx(in[d] + (bias ? bias[d] : T(0)));
    } else {
#pragma omp simd
      for (int64_t d = 0; d < Di; ++d) out[d] = in[d] + bias[d];
    }
  }
}

// gdelta *= softplus'(delta + bias) = sigmoid(delta + bias), in place.
template <class T>
__attribute__((always_inline)) inline void step_sizes_backward(int64_t begin, int64_t end,
                                                               int64_t Di, const T* delta,
                                                               const T* bias, T* gdelta) {
  for (int64_t r = begin; r < end; ++r) {
    const T* in = delta + r * Di;
    T* g = gdelta + r * Di;
#pragma omp simd
    for (int64_t d = 0; d < Di; ++d) g[d] *= simd::sigmoid_approx(in[d] + (bias ? bias[d] : T(0)));
  }
}

// out = y silu(z) over n elements.
template <class T>
__attribute__((always_inline)) inline void gate(int64_t begin, int64_t end, const T* y, const T* z,
                                                T* out) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) out[i] = y[i] * z[i] * simd::sigmoid_approx(z[i]);
}

// From g = dL/d(y silu(z)): gy = g silu(z), gz = g y silu'(z).
template <class T>
__attribute__((always_inline)) inline void gate_backward(int64_t begin, int64_t end, const T* g,
                                                         const T* y, const T* z, T* gy, T* gz) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    const T s = simd::sigmoid_approx(z[i]);
    gy[i] = g[i] * z[i] * s;
    gz[i] = simd::silu_backward(g[i] * y[i], z[i], s);
  }
}

INDUCT_SIMD_CLONES void step_sizes_float(int64_t begin, int64_t end, int64_t Di, const float* delta,
                                         const float* bias, bool softplus, float* dt) {
  step_sizes<float>(begin, end, Di, delta, bias, softplus, dt);
}
INDUCT_SIMD_CLONES void step_sizes_backward_float(int64_t begin, int64_t end, int64_t Di,
                                                  const float* delta, const float* bias,
                                                  float* gdelta) {
  step_sizes_backward<float>(begin, end, Di, delta, bias, gdelta);
}
INDUCT_SIMD_CLONES void gate_float(int64_t begin, int64_t end, const float* y, const float* z,
                                   float* out) {
  gate<float>(begin, end, y, z, out);
}
INDUCT_SIMD_CLONES void gate_backward_float(int64_t begin, int64_t end, const float* g,
                                            const float* y, const float* z, float* gy, float* gz) {
  gate_backward<float>(begin, end, g, y, z, gy, gz);
}

// The passes on the thread pool, each through its float clone or its template for double.
constexpr int64_t kRowGrain = 64;

template <class T>
void run_step_sizes(int64_t rows, int64_t Di, const T* delta, const T* bias, bool softplus, T* dt) {
  at::parallel_for(0, rows, kRowGrain, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      step_sizes_float(begin, end, Di, delta, bias, softplus, dt);
    else
      step_sizes<T>(begin, end, Di, delta, bias, softplus, dt);
  });
}

template <class T>
void run_step_sizes_backward(int64_t rows, int64_t Di, const T* delta, const T* bias, T* gdelta) {
  at::parallel_for(0, rows, kRowGrain, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      step_sizes_backward_float(begin, end, Di, delta, bias, gdelta);
    else
      step_sizes_backward<T>(begin, end, Di, delta, bias, gdelta);
  });
}

template <class T>
void run_gate(int64_t n, const T* y, const T* z, T* out) {
  at::parallel_for(0, n, kRowGrain * 256, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      gate_float(begin, end, y, z, out);
    else
      gate<T>(begin, end, y, z, out);
  });
}

template <class T>
void run_gate_backward(int64_t n, const T* g, const T* y, const T* z, T* gy, T* gz) {
  at::parallel_for(0, n, kRowGrain * 256, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      gate_backward_float(begin, end, g, y, z, gy, gz);
    else
      gate_backward<T>(begin, end, g, y, z, gy, gz);
  });
}

// Inputs: x, delta (raw), A, B, C, D, the delta bias and z (empty tensors when absent: an
// undefined tensor cannot pass through a custom autograd function).
class FusedScan : public torch::autograd::Function<FusedScan> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor delta, torch::Tensor A, torch::Tensor Bm,
                               torch::Tensor C, torch::Tensor D, torch::Tensor bias,
                               torch::Tensor z, bool softplus) {
    x = x.contiguous(), delta = delta.contiguous(), D = D.contiguous();
    bias = bias.contiguous(), z = z.contiguous();
    const bool has_bias = bias.numel() > 0, has_z = z.numel() > 0;
    // States padded to a multiple of kLanes with zeros in A, B and C: a padded state has decay
    // 1 and no input, so it stays 0 and adds nothing to y or to any gradient.
    const int64_t states = A.size(1), pad = (kLanes - states % kLanes) % kLanes;
    auto padded = [pad](const torch::Tensor& t) {
      return pad ? torch::constant_pad_nd(t, {0, pad}) : t.contiguous();
    };
    A = padded(A), Bm = padded(Bm), C = padded(C);
    const int64_t rows = x.size(0) * x.size(1), Di = x.size(2);
    auto dt = has_bias || softplus ? torch::empty_like(delta) : delta;
    auto y = torch::empty_like(x);
    auto out = has_z ? torch::empty_like(x) : y;
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "selective_scan_forward", [&] {
      using T = scalar_t;
      if (dt.data_ptr() != delta.data_ptr())
        run_step_sizes<T>(rows, Di, delta.data_ptr<T>(), has_bias ? bias.data_ptr<T>() : nullptr,
                          softplus, dt.data_ptr<T>());
      scan_forward(args_of<T>(x, dt, A, Bm, C, D), y.data_ptr<T>());
      if (has_z) run_gate<T>(x.numel(), y.data_ptr<T>(), z.data_ptr<T>(), out.data_ptr<T>());
    });
    ctx->saved_data["states"] = states;
    ctx->saved_data["softplus"] = softplus;
    // y before the gate only when there is one (else it is the output: not saved twice).
    ctx->save_for_backward({x, delta, dt, A, Bm, C, D, bias, z, has_z ? y : torch::Tensor()});
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &delta = saved[1], &dt = saved[2], &A = saved[3], &Bm = saved[4],
               &C = saved[5], &D = saved[6], &bias = saved[7], &z = saved[8], &y = saved[9];
    const bool has_bias = bias.numel() > 0, has_z = z.numel() > 0;
    const bool softplus = ctx->saved_data["softplus"].toBool();
    const int64_t rows = x.size(0) * x.size(1), Di = x.size(2);
    auto g = grads[0].contiguous();
    auto gy = has_z ? torch::empty_like(x) : g;
    auto gz = has_z ? torch::empty_like(z) : torch::Tensor();
    auto gx = torch::empty_like(x), gdelta = torch::empty_like(delta);
    auto gB = torch::zeros_like(Bm), gC = torch::zeros_like(C);
    const int64_t chunks = BatchChunks(x.size(0)).count;
    auto gA_parts = torch::zeros({chunks, A.size(0), A.size(1)}, A.options());
    auto gD_parts = torch::zeros({chunks, D.size(0)}, D.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "selective_scan_backward", [&] {
      using T = scalar_t;
      if (has_z)
        run_gate_backward<T>(x.numel(), g.data_ptr<T>(), y.data_ptr<T>(), z.data_ptr<T>(),
                             gy.data_ptr<T>(), gz.data_ptr<T>());
      scan_backward(args_of<T>(x, dt, A, Bm, C, D), gy.data_ptr<T>(), gx.data_ptr<T>(),
                    gdelta.data_ptr<T>(), gA_parts.data_ptr<T>(), gB.data_ptr<T>(),
                    gC.data_ptr<T>(), gD_parts.data_ptr<T>());
      if (softplus)
        run_step_sizes_backward<T>(rows, Di, delta.data_ptr<T>(),
                                   has_bias ? bias.data_ptr<T>() : nullptr, gdelta.data_ptr<T>());
    });
    const int64_t states = ctx->saved_data["states"].toInt();
    return {gx,
            gdelta,
            gA_parts.sum(0).narrow(1, 0, states),
            gB.narrow(2, 0, states),
            gC.narrow(2, 0, states),
            gD_parts.sum(0),
            has_bias ? gdelta.sum(at::IntArrayRef{0, 1}) : torch::Tensor(),
            gz,
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor selective_scan(const torch::Tensor& x, const torch::Tensor& delta,
                             const torch::Tensor& A, const torch::Tensor& Bm,
                             const torch::Tensor& C, const torch::Tensor& D,
                             const ScanOptions& options) {
  // The kernel reads raw memory: a wrong shape must be an error, not a read past a buffer.
  TORCH_CHECK(x.dim() == 3 && A.dim() == 2 && A.size(0) == x.size(2),
              "selective_scan: x must be [B, T, Di] and A [Di, N]");
  const int64_t B = x.size(0), T = x.size(1), Di = x.size(2), N = A.size(1);
  TORCH_CHECK(delta.sizes() == x.sizes(), "selective_scan: delta must be [B, T, Di] like x");
  TORCH_CHECK(Bm.sizes() == torch::IntArrayRef({B, T, N}) && C.sizes() == Bm.sizes(),
              "selective_scan: B and C must be [B, T, N]");
  TORCH_CHECK(D.dim() == 1 && D.size(0) == Di, "selective_scan: D must be [Di]");
  TORCH_CHECK(!options.delta_bias.defined() ||
                  (options.delta_bias.dim() == 1 && options.delta_bias.size(0) == Di),
              "selective_scan: delta_bias must be [Di]");
  TORCH_CHECK(!options.z.defined() || options.z.sizes() == x.sizes(),
              "selective_scan: z must be [B, T, Di] like x");
  const auto same = [&](const torch::Tensor& t) {
    return !t.defined() || (t.device() == x.device() && t.scalar_type() == x.scalar_type());
  };
  const bool fused = x.device().is_cpu() &&
                     (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble) &&
                     same(delta) && same(A) && same(Bm) && same(C) && same(D) &&
                     same(options.delta_bias) && same(options.z);
  if (!fused) return selective_scan_reference(x, delta, A, Bm, C, D, options);
  const auto none = torch::empty({0}, x.options());
  return FusedScan::apply(x, delta, A, Bm, C, D,
                          options.delta_bias.defined() ? options.delta_bias : none,
                          options.z.defined() ? options.z : none, options.delta_softplus);
}

torch::Tensor selective_scan(const torch::Tensor& x, const torch::Tensor& delta,
                             const torch::Tensor& A, const torch::Tensor& Bm,
                             const torch::Tensor& C, const torch::Tensor& D) {
  return selective_scan(x, delta, A, Bm, C, D, ScanOptions{});
}

}  // namespace induct::nn
