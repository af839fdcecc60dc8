#include "induct/nn/mlp.hpp"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/dropout.h>

#include "induct/nn/elementwise.hpp"
#include "induct/nn/linear.hpp"

namespace induct::nn {

torch::Tensor activate(const torch::Tensor& x, Activation activation) {
  switch (activation) {
    case Activation::kGeluTanh:
      return nn::gelu_tanh(x);
    case Activation::kGelu:
      return nn::gelu(x);
    case Activation::kSilu:
      return torch::silu(x);
  }
  return x;
}

MlpImpl::MlpImpl(int64_t dim, int64_t hidden, Activation activation, bool bias, double dropout)
    : activation_(activation), dropout_(dropout) {
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(dim, hidden).bias(bias)));
  proj =
      register_module("proj", torch::nn::Linear(torch::nn::LinearOptions(hidden, dim).bias(bias)));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  auto h = activation_ == Activation::kSilu
               ? activate(nn::linear(x, fc->weight, fc->bias), activation_)
               : nn::linear_gelu(x, fc->weight, fc->bias, activation_ == Activation::kGelu);
  auto y = nn::linear(h, proj->weight, proj->bias);
  if (dropout_ > 0) y = nn::dropout(y, dropout_, is_training());
  return y;
}

SwiGluImpl::SwiGluImpl(int64_t dim, int64_t hidden) {
  gate =
      register_module("gate", torch::nn::Linear(torch::nn::LinearOptions(dim, hidden).bias(false)));
  up = register_module("up", torch::nn::Linear(torch::nn::LinearOptions(dim, hidden).bias(false)));
  down =
      register_module("down", torch::nn::Linear(torch::nn::LinearOptions(hidden, dim).bias(false)));
}

torch::Tensor SwiGluImpl::forward(const torch::Tensor& x) {
  return nn::linear(nn::swiglu(nn::linear(x, gate->weight), nn::linear(x, up->weight)),
                    down->weight);
}

}  // namespace induct::nn
