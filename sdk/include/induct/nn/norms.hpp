// Normalisation layers shared by the in-tree models.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// RMSNorm (Zhang and Sennrich 2019): x / sqrt(mean(x^2) + eps) * weight, weight init 1.
class INDUCT_SDK_API RMSNormImpl : public torch::nn::Module {
 public:
  explicit RMSNormImpl(int64_t dim, double eps = 1e-5);
  torch::Tensor forward(const torch::Tensor& x);  // [..., dim] -> [..., dim]

  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

}  // namespace induct::nn
