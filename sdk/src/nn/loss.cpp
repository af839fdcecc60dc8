#include "induct/nn/loss.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/functional/loss.h>

#include <cmath>
#include <limits>

#include "simd_math.hpp"

namespace induct::nn {

namespace {

// Row by row: lse[n] = log sum_v exp(x[n, v]) for the rows whose target is not ignored (the
// others get NaN and are left out); returns the sum of lse[n] - x[n, target[n]] (in double) and
// the number of rows counted.
INDUCT_SIMD_CLONES
double cross_entropy_forward(int64_t N, int64_t V, const float* x, const int64_t* target,
                             int64_t ignore, float* lse, int64_t* count) {
  double total = 0;
  int64_t counted = 0;
  for (int64_t n = 0; n < N; ++n) {
    const float* row = x + n * V;
    if (target[n] == ignore) {
      lse[n] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
    for (int64_t v = 0; v < V; ++v) m = row[v] > m ? row[v] : m;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t v = 0; v < V; ++v) s += simd::exp_approx(row[v] - m);
    lse[n] = m + std::log(s);
    total += static_cast<double>(lse[n]) - row[target[n]];
    ++counted;
  }
  *count = counted;
  return total;
}

// dx[n, v] = g (softmax(x[n])[v] - [v == target[n]]), 0 on the rows left out.
INDUCT_SIMD_CLONES
void cross_entropy_backward(int64_t N, int64_t V, const float* x, const int64_t* target,
                            int64_t ignore, const float* lse, float g, float* dx) {
  for (int64_t n = 0; n < N; ++n) {
    const float* row = x + n * V;
    float* d = dx + n * V;
    if (target[n] == ignore) {
#pragma omp simd
      for (int64_t v = 0; v < V; ++v) d[v] = 0;
      continue;
    }
    const float l = lse[n];
#pragma omp simd
    for (int64_t v = 0; v < V; ++v) d[v] = g * simd::exp_approx(row[v] - l);
    d[target[n]] -= g;
  }
}

class FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& logits,
                            const at::Tensor& targets, int64_t ignore_index) {
    const int64_t N = logits.size(0), V = logits.size(1);
    auto x = logits.contiguous();
    auto t = targets.contiguous();
    const int64_t* tp = t.data_ptr<int64_t>();
    for (int64_t n = 0; n < N; ++n)
      TORCH_CHECK(tp[n] == ignore_index || (tp[n] >= 0 && tp[n] < V), "cross_entropy: target ",
                  tp[n], " out of bounds for ", V, " classes");
    auto lse = at::empty({N}, x.options());
    int64_t count = 0;
    const double total = cross_entropy_forward(N, V, x.data_ptr<float>(), tp, ignore_index,
                                               lse.data_ptr<float>(), &count);
    ctx->save_for_backward({x, t});
    ctx->saved_data["lse"] = lse;
    ctx->saved_data["count"] = count;
    ctx->saved_data["ignore"] = ignore_index;
    // 0 / 0 when every row is left out: NaN, as LibTorch's mean.
    return at::scalar_tensor(static_cast<float>(total / static_cast<double>(count)), x.options());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& t = saved[1];
    const auto lse = ctx->saved_data["lse"].toTensor();
    const int64_t count = ctx->saved_data["count"].toInt();
    const int64_t N = x.size(0), V = x.size(1);
    auto dx = at::empty_like(x);
    const float g = grads[0].item<float>() / static_cast<float>(count);
    cross_entropy_backward(N, V, x.data_ptr<float>(), t.data_ptr<int64_t>(),
                           ctx->saved_data["ignore"].toInt(), lse.data_ptr<float>(), g,
                           dx.data_ptr<float>());
    return {dx, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets,
                            int64_t ignore_index) {
  TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
              "cross_entropy: logits must be [N, V] and targets [N]");
  if (logits.device().is_cpu() && logits.scalar_type() == at::kFloat &&
      targets.scalar_type() == at::kLong)
    return FusedCrossEntropy::apply(logits, targets, ignore_index);
  return torch::nn::functional::cross_entropy(
      logits, targets, torch::nn::functional::CrossEntropyFuncOptions().ignore_index(ignore_index));
}

}  // namespace induct::nn
