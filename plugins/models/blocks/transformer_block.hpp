// The transformer block of the in-tree transformers (gpt2, llama, pythia) and of the hybrid
// and looped models: pre-norm causal self-attention and an MLP, in one of three styles (see
// plugins/models/transformer/transformer.cpp). Header-only, compiled into each plugin that
// uses it.
#pragma once

#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/utils.h>

#include <induct/nn/attention.hpp>
#include <induct/nn/elementwise.hpp>
#include <induct/nn/mlp.hpp>
#include <induct/nn/norms.hpp>
#include <string>
#include <utility>

namespace induct::blocks {

using induct::nn::Activation;

struct Style {
  bool learned_positions = false;
  bool rms_norm = false;
  bool parallel_residual = false;
  bool swiglu = false;
  bool bias = true;
  bool tied = false;
  bool scaled_residual_init = false;  // GPT-2: residual projections N(0, 0.02 / sqrt(2 layers))
  Activation activation = Activation::kGelu;
  double rotary_fraction = 0.0;
};

struct TransformerConfig {
  Style style;
  int64_t vocab = 0, max_length = 0, positions = 0;
  int64_t layers = 6, d_model = 256, heads = 4, d_ff = 1024;
  double dropout = 0.0, rope_theta = 10000, norm_eps = 1e-5;
};

// LayerNorm or RMSNorm, registered under one name so parameter names do not depend on it.
class Norm {
 public:
  Norm() = default;
  Norm(torch::nn::Module& owner, const std::string& name, const TransformerConfig& c) {
    if (c.style.rms_norm)
      rms_ = owner.register_module(name, induct::nn::RMSNorm(c.d_model, c.norm_eps));
    else
      layer_ = owner.register_module(
          name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model}).eps(c.norm_eps)));
  }
  torch::Tensor operator()(const torch::Tensor& x) {
    if (rms_) return rms_(x);
    return induct::nn::layer_norm(x, layer_->weight, layer_->bias, layer_->options.eps());
  }
  // Both norms of one x: as {a(x), b(x)}, two LayerNorms in one node (statistics once).
  static std::pair<torch::Tensor, torch::Tensor> pair(Norm& a, Norm& b, const torch::Tensor& x) {
    if (a.rms_ || b.rms_) return {a(x), b(x)};
    return induct::nn::layer_norm_pair(x, a.layer_->weight, a.layer_->bias, b.layer_->weight,
                                       b.layer_->bias, a.layer_->options.eps());
  }

 private:
  induct::nn::RMSNorm rms_{nullptr};
  torch::nn::LayerNorm layer_{nullptr};
};

class TransformerBlock : public torch::nn::Module {
 public:
  explicit TransformerBlock(const TransformerConfig& c) : parallel_(c.style.parallel_residual) {
    norm1_ = Norm(*this, "norm1", c);
    induct::nn::AttentionOptions attention;
    attention.dim = c.d_model;
    attention.heads = c.heads;
    attention.bias = c.style.bias;
    attention.dropout = c.dropout;
    attention.rotary_dim = static_cast<int64_t>(c.d_model / c.heads * c.style.rotary_fraction);
    attention.rope_theta = c.rope_theta;
    attention.max_length = c.max_length;
    attn_ = register_module("attn", induct::nn::CausalSelfAttention(attention));
    norm2_ = Norm(*this, "norm2", c);
    if (c.style.swiglu)
      swiglu_ = register_module("mlp", induct::nn::SwiGlu(c.d_model, c.d_ff));
    else
      mlp_ = register_module(
          "mlp", induct::nn::Mlp(c.d_model, c.d_ff, c.style.activation, c.style.bias, c.dropout));
  }

  torch::Tensor forward(const torch::Tensor& x) {  // [B, T, D]
    if (parallel_) {
      auto [n1, n2] = Norm::pair(norm1_, norm2_, x);
      return x + attn_(n1) + feed_forward(n2);
    }
    auto h = x + attn_(norm1_(x));
    return h + feed_forward(norm2_(h));
  }

  torch::Tensor feed_forward(const torch::Tensor& x) { return swiglu_ ? swiglu_(x) : mlp_(x); }
  induct::nn::CausalSelfAttention& attention() { return attn_; }
  induct::nn::Mlp& mlp() { return mlp_; }

  // GPT-2 / nanoGPT, Llama and GPT-NeoX all draw weights from N(0, 0.02) with zero biases and
  // unit norms: for a block on its own (the transformers initialise over the whole model, in
  // the same order).
  void initialise() {
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) initialise_parameter(p.key(), p.value());
  }

  static void initialise_parameter(const std::string& name, torch::Tensor& t) {
    const bool is_bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
    const bool is_norm = name.find("norm") != std::string::npos;
    if (is_norm)
      is_bias ? t.zero_() : t.fill_(1.0);
    else if (is_bias)
      t.zero_();
    else
      t.normal_(0.0, 0.02);
  }

 private:
  bool parallel_;
  Norm norm1_, norm2_;
  induct::nn::CausalSelfAttention attn_{nullptr};
  induct::nn::Mlp mlp_{nullptr};
  induct::nn::SwiGlu swiglu_{nullptr};
};

}  // namespace induct::blocks
