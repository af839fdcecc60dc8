#include "induct/nn/conv.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

#include "batch_chunks.hpp"
#include "simd_math.hpp"

namespace induct::nn {

torch::Tensor causal_conv1d_reference(const torch::Tensor& x, const torch::Tensor& weight,
                                      const torch::Tensor& bias, bool silu) {
  const int64_t T = x.size(1), K = weight.size(1);
  auto padded = torch::constant_pad_nd(x, {0, 0, K - 1, 0});  // [B, K-1+T, C]
  auto w = weight.t();                                        // [K, C]
  auto u = padded.narrow(1, 0, T) * w[0];
  for (int64_t k = 1; k < K; ++k) u = u + padded.narrow(1, k, T) * w[k];
  if (bias.defined()) u = u + bias;
  return silu ? torch::silu(u) : u;
}

namespace {

// The shapes and raw views of one call: x [B, T, C], the weight transposed to [K, C] (so that
// a tap's weights are contiguous along channels), bias [C].
struct ConvArgs {
  int64_t steps, channels, taps;
  const float *x, *w, *bias;
  bool silu;
  const float* row(int64_t b, int64_t t) const { return x + (b * steps + t) * channels; }
};

// u = bias + sum_k w_k x_{t-K+1+k} for one (b, t) into u [C] (taps before t = 0 skipped).
__attribute__((always_inline)) inline void pre_activation(const ConvArgs& a, int64_t b, int64_t t,
                                                          float* u) {
  const int64_t C = a.channels;
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) u[c] = a.bias[c];
  for (int64_t k = std::max<int64_t>(0, a.taps - 1 - t); k < a.taps; ++k) {
    const float* xr = a.row(b, t - a.taps + 1 + k);
    const float* wk = a.w + k * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) u[c] += wk[c] * xr[c];
  }
}

INDUCT_SIMD_CLONES void conv_forward(const ConvArgs& a, int64_t begin, int64_t end, float* y) {
  const int64_t C = a.channels;
  for (int64_t b = begin; b < end; ++b)
    for (int64_t t = 0; t < a.steps; ++t) {
      float* u = y + (b * a.steps + t) * C;
      pre_activation(a, b, t, u);
      if (a.silu) {
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) u[c] *= simd::sigmoid_approx(u[c]);
      }
    }
}

// Backward of batch indices [begin, end): gx, and this chunk's rows gw_part [K, C] and gb_part
// [C] of the weight's and bias's gradients. gu: [T, C] scratch (the pre-activation's gradient).
INDUCT_SIMD_CLONES void conv_backward(const ConvArgs& a, int64_t begin, int64_t end,
                                      const float* gy, float* gx, float* gw_part, float* gb_part,
                                      float* gu) {
  const int64_t C = a.channels, T = a.steps, K = a.taps;
  for (int64_t b = begin; b < end; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      float* g = gu + t * C;
      const float* gyr = gy + (b * T + t) * C;
      if (a.silu) {
        pre_activation(a, b, t, g);
#pragma omp simd
        for (int64_t c = 0; c < C; ++c)
          g[c] = simd::silu_backward(gyr[c], g[c], simd::sigmoid_approx(g[c]));
      } else {
        std::copy(gyr, gyr + C, g);
      }
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) gb_part[c] += g[c];
      // Tap k joined x_{t-K+1+k} to u_t.
      for (int64_t k = std::max<int64_t>(0, K - 1 - t); k < K; ++k) {
        const float* xr = a.row(b, t - K + 1 + k);
        float* gwk = gw_part + k * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) gwk[c] += g[c] * xr[c];
      }
    }
    for (int64_t s = 0; s < T; ++s) {  // gx_s = sum_k w_k gu_{s+K-1-k}
      float* gxr = gx + (b * T + s) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) gxr[c] = 0.0f;
      for (int64_t k = std::max<int64_t>(0, s + K - T); k < K; ++k) {
        const float* g = gu + (s + K - 1 - k) * C;
        const float* wk = a.w + k * C;
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) gxr[c] += wk[c] * g[c];
      }
    }
  }
}

class FusedCausalConv : public torch::autograd::Function<FusedCausalConv> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               torch::Tensor weight, torch::Tensor bias, bool silu) {
    x = x.contiguous();
    auto wt = weight.t().contiguous();  // [K, C]
    bias = bias.contiguous();
    ctx->save_for_backward({x, wt, bias});
    ctx->saved_data["silu"] = silu;
    auto y = torch::empty_like(x);
    const ConvArgs a = args(x, wt, bias, silu);
    BatchChunks(x.size(0)).run([&](int64_t, int64_t begin, int64_t end) {
      conv_forward(a, begin, end, y.data_ptr<float>());
    });
    return y;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &wt = saved[1], &bias = saved[2];
    const ConvArgs a = args(x, wt, bias, ctx->saved_data["silu"].toBool());
    auto gy = grads[0].contiguous();
    auto gx = torch::empty_like(x);
    const BatchChunks chunks(x.size(0));
    const int64_t K = wt.size(0), C = wt.size(1);
    auto gw_parts = torch::zeros({chunks.count, K, C}, wt.options());
    auto gb_parts = torch::zeros({chunks.count, C}, wt.options());
    chunks.run([&](int64_t chunk, int64_t begin, int64_t end) {
      std::vector<float> gu(a.steps * C);
      conv_backward(a, begin, end, gy.data_ptr<float>(), gx.data_ptr<float>(),
                    gw_parts[chunk].data_ptr<float>(), gb_parts[chunk].data_ptr<float>(),
                    gu.data());
    });
    return {gx, gw_parts.sum(0).t(), gb_parts.sum(0), torch::Tensor()};
  }

 private:
  static ConvArgs args(const torch::Tensor& x, const torch::Tensor& wt, const torch::Tensor& bias,
                       bool silu) {
    return {x.size(1),
            x.size(2),
            wt.size(0),
            x.data_ptr<float>(),
            wt.data_ptr<float>(),
            bias.data_ptr<float>(),
            silu};
  }
};

}  // namespace

torch::Tensor causal_conv1d(const torch::Tensor& x, const torch::Tensor& weight,
                            const torch::Tensor& bias, bool silu) {
  TORCH_CHECK(x.dim() == 3 && weight.dim() == 2 && weight.size(0) == x.size(2),
              "causal_conv1d: x must be [B, T, C] and weight [C, K]");
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == x.size(2)),
              "causal_conv1d: bias must be [C]");
  const auto is_float_cpu = [](const torch::Tensor& t) {
    return !t.defined() || (t.device().is_cpu() && t.scalar_type() == torch::kFloat);
  };
  if (!(is_float_cpu(x) && is_float_cpu(weight) && is_float_cpu(bias)))
    return causal_conv1d_reference(x, weight, bias, silu);
  // (An undefined tensor cannot pass through a custom autograd function: no bias is a zero one.)
  return FusedCausalConv::apply(
      x, weight, bias.defined() ? bias : torch::zeros({x.size(2)}, x.options()), silu);
}

}  // namespace induct::nn
