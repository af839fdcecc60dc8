// Feed-forward blocks of transformers.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

enum class Activation { kGeluTanh, kGelu, kSilu };

// fc (dim -> hidden), activation, proj (hidden -> dim), dropout on the output.
class INDUCT_SDK_API MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(int64_t dim, int64_t hidden, Activation activation, bool bias, double dropout);
  torch::Tensor forward(const torch::Tensor& x);  // [..., dim] -> [..., dim]

  torch::nn::Linear fc{nullptr}, proj{nullptr};

 private:
  Activation activation_;
  double dropout_;
};
TORCH_MODULE(Mlp);

// SwiGLU (Shazeer 2020) as in Llama: down(silu(gate(x)) * up(x)), no biases.
class INDUCT_SDK_API SwiGluImpl : public torch::nn::Module {
 public:
  SwiGluImpl(int64_t dim, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear gate{nullptr}, up{nullptr}, down{nullptr};
};
TORCH_MODULE(SwiGlu);

torch::Tensor INDUCT_SDK_API activate(const torch::Tensor& x, Activation activation);

}  // namespace induct::nn
