#include "train/optimizer.hpp"

#include <torch/utils.h>

#include <cmath>
#include <stdexcept>

namespace induct {

FlatAdam::FlatAdam(std::vector<torch::Tensor> parameters, double lr, double beta1, double beta2,
                   double eps)
    : parameters_(std::move(parameters)), lr_(lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  torch::NoGradGuard no_grad;
  int64_t total = 0;
  for (const auto& p : parameters_) {
    if (!p.is_floating_point()) throw std::invalid_argument("FlatAdam: a non-float parameter");
    if (p.scalar_type() != parameters_.front().scalar_type() || p.device() != parameters_.front().device())
      throw std::invalid_argument("FlatAdam: parameters of mixed dtypes or devices");
    total += p.numel();
  }
  auto options = parameters_.empty() ? torch::TensorOptions() : parameters_.front().options();
  values_ = torch::empty({total}, options);
  grads_ = torch::zeros({total}, options);
  exp_avg_ = torch::zeros({total}, options);
  exp_avg_sq_ = torch::zeros({total}, options);
  denom_ = torch::empty({total}, options);
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

void FlatAdam::step() {
  torch::NoGradGuard no_grad;
  ++steps_;
  const double bias1 = 1 - std::pow(beta1_, static_cast<double>(steps_));
  const double bias2 = 1 - std::pow(beta2_, static_cast<double>(steps_));
  exp_avg_.mul_(beta1_).add_(grads_, 1 - beta1_);
  exp_avg_sq_.mul_(beta2_).addcmul_(grads_, grads_, 1 - beta2_);
  torch::sqrt_out(denom_, exp_avg_sq_);
  denom_.div_(std::sqrt(bias2)).add_(eps_);
  values_.addcdiv_(exp_avg_, denom_, -lr_ / bias1);
}

}  // namespace induct
