// A torch::nn::Linear's parameters through the SDK's linear (oneDNN's sgemm on the CPU).
#pragma once

#include <torch/nn/modules/linear.h>

#include <induct/nn/linear.hpp>

namespace induct::blocks {

inline torch::Tensor project(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return induct::nn::linear(x, layer->weight, layer->bias);
}

inline torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

}  // namespace induct::blocks
