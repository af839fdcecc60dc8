#include "train/optimizer.hpp"

#include <torch/utils.h>

#include <cmath>
#include <stdexcept>

namespace induct {

namespace {

// Adam's update in one pass over the flat buffers, instead of LibTorch's seven operations (about
// 2% of a small LSTM step); the same update, rounded differently (the trial key's version covers
// it). Compiled for AVX-512, AVX2 and the baseline, chosen at load time, like the SDK's kernels;
// the file is compiled with -fno-math-errno so that sqrt vectorises.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void adam_step(int64_t n, float* __restrict p, const float* __restrict g, float* __restrict m,
               float* __restrict v, float beta1, float beta2, float step, float unbias2, float eps) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1 - beta1) * g[i];
    v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
    p[i] -= step * m[i] / (std::sqrt(v[i]) * unbias2 + eps);
  }
}

}  // namespace

FlatAdam::FlatAdam(std::vector<torch::Tensor> parameters, double lr, double beta1, double beta2,
                   double eps)
    : parameters_(std::move(parameters)), lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  torch::NoGradGuard no_grad;
  int64_t total = 0;
  for (const auto& p : parameters_) {
    if (!p.is_floating_point()) throw std::invalid_argument("FlatAdam: a non-float parameter");
    if (p.scalar_type() != parameters_.front().scalar_type() ||
        p.device() != parameters_.front().device())
      throw std::invalid_argument("FlatAdam: parameters of mixed dtypes or devices");
    total += p.numel();
  }
  auto options = parameters_.empty() ? torch::TensorOptions() : parameters_.front().options();
  values_ = torch::empty({total}, options);
  grads_ = torch::zeros({total}, options);
  exp_avg_ = torch::zeros({total}, options);
  exp_avg_sq_ = torch::zeros({total}, options);
  int64_t offset = 0;
  for (auto& p : parameters_) {
    const int64_t n = p.numel();
    auto value = values_.narrow(0, offset, n).view(p.sizes());
    value.copy_(p);
    p.set_data(value);
    // Backward adds into a defined gradient in place (AccumulateGrad), so it lands here.
    p.mutable_grad() = grads_.narrow(0, offset, n).view(p.sizes());
    offset += n;
  }
}

void FlatAdam::zero_grad() { grads_.zero_(); }

void FlatAdam::restore(const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                       int64_t steps) {
  if (exp_avg.sizes() != exp_avg_.sizes() || exp_avg_sq.sizes() != exp_avg_sq_.sizes())
    throw std::invalid_argument("FlatAdam::restore: moments of " + std::to_string(exp_avg.numel()) +
                                " values for " + std::to_string(exp_avg_.numel()) + " parameters");
  torch::NoGradGuard no_grad;
  exp_avg_.copy_(exp_avg);
  exp_avg_sq_.copy_(exp_avg_sq);
  steps_ = steps;
}

void FlatAdam::step() {
  torch::NoGradGuard no_grad;
  ++steps_;
  const double bias1 = 1 - std::pow(beta1_, static_cast<double>(steps_));
  const double bias2 = 1 - std::pow(beta2_, static_cast<double>(steps_));
  if (values_.device().is_cpu() && values_.scalar_type() == torch::kFloat) {
    adam_step(values_.numel(), values_.data_ptr<float>(), grads_.data_ptr<float>(),
              exp_avg_.data_ptr<float>(), exp_avg_sq_.data_ptr<float>(), static_cast<float>(beta1_),
              static_cast<float>(beta2_), static_cast<float>(lr_ / bias1),
              static_cast<float>(1 / std::sqrt(bias2)), static_cast<float>(eps_));
    return;
  }
  exp_avg_.mul_(beta1_).add_(grads_, 1 - beta1_);
  exp_avg_sq_.mul_(beta2_).addcmul_(grads_, grads_, 1 - beta2_);
  if (!denom_.defined()) denom_ = torch::empty_like(values_);  // only this path needs it
  torch::sqrt_out(denom_, exp_avg_sq_);
  denom_.div_(std::sqrt(bias2)).add_(eps_);
  values_.addcdiv_(exp_avg_, denom_, -lr_ / bias1);
}

}  // namespace induct
