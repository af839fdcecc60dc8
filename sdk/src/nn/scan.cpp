#include "induct/nn/scan.hpp"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <vector>

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
    ys.push_back(torch::bmm(h, cs[t].unsqueeze(-1)).squeeze(-1));     // [B, Di]
  }
  return torch::stack(ys, 1) + x * D;                                 // [B, T, Di]
}

namespace {

// Raw views of the contiguous inputs.
template <class T>
struct ScanArgs {
  int64_t batch, steps, channels, states;
  const T *x, *delta, *A, *B, *C, *D;
  T at_x(int64_t b, int64_t t, int64_t d) const { return x[(b * steps + t) * channels + d]; }
  T at_delta(int64_t b, int64_t t, int64_t d) const { return delta[(b * steps + t) * channels + d]; }
  const T* row_B(int64_t b, int64_t t) const { return B + (b * steps + t) * states; }
  const T* row_C(int64_t b, int64_t t) const { return C + (b * steps + t) * states; }
};

// decay[d, n] = exp(delta[b, t, d] * A[d, n]) for one (b, t), through ATen's vectorised exp
// (a scalar exp per element was half of a Mamba training step).
template <class T>
void fill_decay(const ScanArgs<T>& a, int64_t b, int64_t t, torch::Tensor& decay) {
  T* e = decay.template data_ptr<T>();
  for (int64_t d = 0; d < a.channels; ++d) {
    const T dt = a.at_delta(b, t, d);
    const T* Ad = a.A + d * a.states;
    for (int64_t n = 0; n < a.states; ++n) e[d * a.states + n] = dt * Ad[n];
  }
  decay.exp_();
}

// Advances the state of one batch index, [channels, states], by step t: h = e * previous +
// delta x B (previous null: h_0 = 0), and writes y[b, t, :] when y is given.
template <class T>
void advance(const ScanArgs<T>& a, int64_t b, int64_t t, const T* e, const T* previous, T* h,
             T* y) {
  const int64_t S = a.states;
  const T* Bt = a.row_B(b, t);
  const T* Ct = a.row_C(b, t);
  for (int64_t d = 0; d < a.channels; ++d) {
    const T xv = a.at_x(b, t, d), drive = a.at_delta(b, t, d) * xv;
    const T* ed = e + d * S;
    const T* pd = previous ? previous + d * S : nullptr;
    T* hd = h + d * S;
    T out = 0;
    if (pd) {
#pragma omp simd reduction(+ : out)
      for (int64_t n = 0; n < S; ++n) {
        hd[n] = ed[n] * pd[n] + drive * Bt[n];
        out += Ct[n] * hd[n];
      }
    } else {
#pragma omp simd reduction(+ : out)
      for (int64_t n = 0; n < S; ++n) {
        hd[n] = drive * Bt[n];
        out += Ct[n] * hd[n];
      }
    }
    if (y) y[(b * a.steps + t) * a.channels + d] = out + a.D[d] * xv;
  }
}

template <class T>
void scan_forward(const ScanArgs<T>& a, T* y, const torch::TensorOptions& options) {
  at::parallel_for(0, a.batch, 1, [&](int64_t begin, int64_t end) {
    auto decay = torch::empty({a.channels, a.states}, options);
    std::vector<T> h(a.channels * a.states), next(a.channels * a.states);
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t t = 0; t < a.steps; ++t) {
        fill_decay(a, b, t, decay);
        advance(a, b, t, decay.template data_ptr<T>(), t > 0 ? h.data() : nullptr, next.data(), y);
        std::swap(h, next);
      }
    }
  });
}

// Reverse-mode through the recurrence, one batch index at a time: recompute its states
// h_1..h_T and decays, then walk back carrying dL/dh. gA and gD sum over the batch: each batch
// index writes its own slice of a buffer that is reduced afterwards.
template <class T>
void scan_backward(const ScanArgs<T>& a, const T* gy, T* gx, T* gdelta, T* gA_parts, T* gB,
                   T* gC, T* gD_parts, const torch::TensorOptions& options) {
  at::parallel_for(0, a.batch, 1, [&](int64_t begin, int64_t end) {
    const int64_t S = a.states, width = a.channels * S;
    auto decays = torch::empty({a.steps, a.channels, S}, options);
    std::vector<T> hs(a.steps * width), gh(width), zeros(S, T(0));
    T* all_decays = decays.template data_ptr<T>();
    for (int64_t b = begin; b < end; ++b) {
      for (int64_t t = 0; t < a.steps; ++t) {
        auto decay = decays[t];
        fill_decay(a, b, t, decay);
        advance<T>(a, b, t, all_decays + t * width, t > 0 ? hs.data() + (t - 1) * width : nullptr,
                   hs.data() + t * width, nullptr);
      }
      std::fill(gh.begin(), gh.end(), T(0));
      T* gA_b = gA_parts + b * width;
      for (int64_t t = a.steps - 1; t >= 0; --t) {
        const T* Bt = a.row_B(b, t);
        const T* Ct = a.row_C(b, t);
        T* gBt = gB + (b * a.steps + t) * S;
        T* gCt = gC + (b * a.steps + t) * S;
        for (int64_t d = 0; d < a.channels; ++d) {
          const int64_t at = (b * a.steps + t) * a.channels + d;
          const T g = gy[at], dt = a.delta[at], xv = a.x[at];
          const T* Ad = a.A + d * S;
          const T* h = hs.data() + t * width + d * S;
          const T* e = all_decays + t * width + d * S;
          // h_0 = 0: a row of zeros stands in for it.
          const T* previous = t > 0 ? hs.data() + (t - 1) * width + d * S : zeros.data();
          T* ghd = gh.data() + d * S;
          T* gAd = gA_b + d * S;
          T gx_t = g * a.D[d], gdt = 0;
          gD_parts[b * a.channels + d] += g * xv;
#pragma omp simd reduction(+ : gdt, gx_t)
          for (int64_t n = 0; n < S; ++n) {
            ghd[n] += g * Ct[n];
            gCt[n] += g * h[n];
            const T hp = previous[n];
            // h_t = e * h_{t-1} + dt * x * B,  e = exp(dt * A)
            gdt += ghd[n] * (Ad[n] * e[n] * hp + xv * Bt[n]);
            gx_t += ghd[n] * dt * Bt[n];
            gBt[n] += ghd[n] * dt * xv;
            gAd[n] += ghd[n] * dt * e[n] * hp;
            ghd[n] *= e[n];
          }
          gx[at] = gx_t;
          gdelta[at] = gdt;
        }
      }
    }
  });
}

template <class T>
ScanArgs<T> args_of(const torch::Tensor& x, const torch::Tensor& delta, const torch::Tensor& A,
                    const torch::Tensor& Bm, const torch::Tensor& C, const torch::Tensor& D) {
  return {x.size(0),          x.size(1),          x.size(2),          A.size(1),
          x.data_ptr<T>(),    delta.data_ptr<T>(), A.data_ptr<T>(),   Bm.data_ptr<T>(),
          C.data_ptr<T>(),    D.data_ptr<T>()};
}

class FusedScan : public torch::autograd::Function<FusedScan> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor delta, torch::Tensor A, torch::Tensor Bm,
                               torch::Tensor C, torch::Tensor D) {
    x = x.contiguous(), delta = delta.contiguous(), A = A.contiguous();
    Bm = Bm.contiguous(), C = C.contiguous(), D = D.contiguous();
    ctx->save_for_backward({x, delta, A, Bm, C, D});
    auto y = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "selective_scan_forward", [&] {
      scan_forward(args_of<scalar_t>(x, delta, A, Bm, C, D), y.data_ptr<scalar_t>(), x.options());
    });
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &delta = saved[1], &A = saved[2], &Bm = saved[3], &C = saved[4],
               &D = saved[5];
    auto gy = grads[0].contiguous();
    auto gx = torch::empty_like(x), gdelta = torch::empty_like(delta);
    auto gB = torch::zeros_like(Bm), gC = torch::zeros_like(C);
    auto gA_parts = torch::zeros({x.size(0), A.size(0), A.size(1)}, A.options());
    auto gD_parts = torch::zeros({x.size(0), D.size(0)}, D.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "selective_scan_backward", [&] {
      scan_backward(args_of<scalar_t>(x, delta, A, Bm, C, D), gy.data_ptr<scalar_t>(),
                    gx.data_ptr<scalar_t>(), gdelta.data_ptr<scalar_t>(),
                    gA_parts.data_ptr<scalar_t>(), gB.data_ptr<scalar_t>(),
                    gC.data_ptr<scalar_t>(), gD_parts.data_ptr<scalar_t>(), x.options());
    });
    return {gx, gdelta, gA_parts.sum(0), gB, gC, gD_parts.sum(0)};
  }
};

}  // namespace

torch::Tensor selective_scan(const torch::Tensor& x, const torch::Tensor& delta,
                             const torch::Tensor& A, const torch::Tensor& Bm,
                             const torch::Tensor& C, const torch::Tensor& D) {
  const bool fused = x.device().is_cpu() && x.scalar_type() == delta.scalar_type() &&
                     (x.scalar_type() == torch::kFloat || x.scalar_type() == torch::kDouble);
  if (!fused) return selective_scan_reference(x, delta, A, Bm, C, D);
  return FusedScan::apply(x, delta, A, Bm, C, D);
}

}  // namespace induct::nn
