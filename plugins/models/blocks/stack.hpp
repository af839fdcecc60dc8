// The frame of the models laid out as Mamba's: an embedding drawn from N(0, 0.02), the model's
// blocks (registered by the subclass, between the constructor and finish(), so that parameters
// and random draws follow the layers), a final RMSNorm and a head, tied to the embedding or a
// linear layer of its own. Hook points "embed" and "norm"; the subclass names its blocks'.
// Used by mamba, mamba2, deltanet, hybrid and looped.
#pragma once

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <induct/model.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/norms.hpp>

#include "blocks/project.hpp"

namespace induct::blocks {

enum class Head { kTied, kLinear, kLinearWithBias };

class Stack : public induct::SequenceModel {
 protected:
  Stack(int64_t vocab, int64_t d_model) {
    embed_ = register_module("embed", torch::nn::Embedding(vocab, d_model));
    torch::NoGradGuard no_grad;
    embed_->weight.normal_(0.0, 0.02);
  }

  // After the blocks: the final norm and the head.
  void finish(int64_t vocab, int64_t d_model, Head head) {
    norm_ = register_module("norm", induct::nn::RMSNorm(d_model));
    if (head != Head::kTied)
      head_ = register_module("head", linear(d_model, vocab, head == Head::kLinearWithBias));
  }

  torch::Tensor embed(const torch::Tensor& tokens) { return hooks("embed", embed_(tokens)); }

  torch::Tensor head(const torch::Tensor& x) {  // [B, T, D] -> [B, T, V]
    const auto normed = hooks("norm", norm_(x));
    return head_ ? project(head_, normed) : induct::nn::linear(normed, embed_->weight);
  }

 private:
  torch::nn::Embedding embed_{nullptr};
  induct::nn::RMSNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};

}  // namespace induct::blocks
