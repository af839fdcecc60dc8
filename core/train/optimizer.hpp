// Adam over all of a model's parameters at once.
#pragma once

#include <torch/types.h>

#include <vector>

namespace induct {

// Adam (Kingma and Ba; PyTorch's formula: bias-corrected moments, eps added after the square
// root), with every parameter and gradient living in one flat buffer: a step is a handful of
// tensor operations however many parameter tensors the model has (LibTorch's Adam runs
// several per parameter tensor, which dominates a step of a small model). The parameters
// become views of the buffer; their gradients are views of a second buffer that backward
// accumulates into.
class FlatAdam {
 public:
  FlatAdam(std::vector<torch::Tensor> parameters, double lr, double beta1 = 0.9,
           double beta2 = 0.999, double eps = 1e-8);
  void zero_grad();
  void step();

  // The moments and the step count, to save a training and go on from it (the parameters are
  // the model's own, saved with it): restore(m, v, steps) after construction makes the next
  // step the one that would have followed.
  const torch::Tensor& exp_avg() const { return exp_avg_; }
  const torch::Tensor& exp_avg_sq() const { return exp_avg_sq_; }
  int64_t steps() const { return steps_; }
  void restore(const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq, int64_t steps);

 private:
  std::vector<torch::Tensor> parameters_;
  torch::Tensor values_, grads_, exp_avg_, exp_avg_sq_, denom_;
  double lr_, beta1_, beta2_, eps_;
  int64_t steps_ = 0;
};

}  // namespace induct
