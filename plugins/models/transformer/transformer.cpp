// Decoder-only transformers of the paper (docs/method.md section 8), one block class in three
// styles:
//   gpt2:   learned absolute positions, pre-LayerNorm, GELU (tanh), biases, tied embedding and
//           head, dropout 0.1 in training.
//   llama:  RMSNorm, rotary on the whole head, SwiGLU, no biases, no dropout, untied head.
//   pythia: GPT-NeoX: parallel residual x + attn(ln1 x) + mlp(ln2 x), LayerNorm, rotary on 25%
//           of each head, exact GELU, biases, untied head.
// Attention, rotary, RMSNorm and the MLPs are the SDK's shared blocks (induct/nn).
#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/model.hpp>
#include <induct/nn/attention.hpp>
#include <induct/nn/elementwise.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/mlp.hpp>
#include <induct/nn/norms.hpp>
#include <induct/plugin.hpp>

namespace {

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

struct Config {
  Style style;
  int64_t vocab = 0, max_length = 0, positions = 0;
  int64_t layers = 6, d_model = 256, heads = 4, d_ff = 1024;
  double dropout = 0.0, rope_theta = 10000, norm_eps = 1e-5;
};

// LayerNorm or RMSNorm, registered under one name so parameter names do not depend on it.
class Norm {
 public:
  Norm() = default;
  Norm(torch::nn::Module& owner, const std::string& name, const Config& c) {
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

class Block : public torch::nn::Module {
 public:
  explicit Block(const Config& c) : parallel_(c.style.parallel_residual) {
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

 private:
  bool parallel_;
  Norm norm1_, norm2_;
  induct::nn::CausalSelfAttention attn_{nullptr};
  induct::nn::Mlp mlp_{nullptr};
  induct::nn::SwiGlu swiglu_{nullptr};
};

class Transformer final : public induct::SequenceModel {
 public:
  explicit Transformer(const Config& c) : config_(c) {
    tok_ = register_module("tok", torch::nn::Embedding(c.vocab, c.d_model));
    if (c.style.learned_positions)
      pos_ = register_module("pos", torch::nn::Embedding(c.positions, c.d_model));
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      blocks_.push_back(std::make_shared<Block>(c));
      list->push_back(blocks_.back());
    }
    norm_ = Norm(*this, "norm", c);
    if (!c.style.tied)
      head_ = register_module(
          "head", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, c.vocab).bias(false)));
    initialise();
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    const int64_t T = tokens.size(1);
    auto x = tok_(tokens);  // [B, T, D]
    if (pos_) x = x + pos_(torch::arange(T, tokens.options()));
    if (config_.dropout > 0) x = induct::nn::dropout(x, config_.dropout, is_training());
    x = hooks("embed", x);
    for (size_t i = 0; i < blocks_.size(); ++i)
      x = hooks("block." + std::to_string(i), blocks_[i]->forward(x));
    x = hooks("norm", norm_(x));
    return induct::nn::linear(x, head_ ? head_->weight : tok_->weight);
  }

 private:
  // GPT-2 / nanoGPT, Llama and GPT-NeoX all draw weights from N(0, 0.02) with zero biases and
  // unit norms; GPT-2 scales its residual projections by 1 / sqrt(2 layers).
  void initialise() {
    torch::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      const std::string& name = p.key();
      auto& t = p.value();
      const bool is_bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
      const bool is_norm = name.find("norm") != std::string::npos;
      if (is_norm)
        is_bias ? t.zero_() : t.fill_(1.0);
      else if (is_bias)
        t.zero_();
      else
        t.normal_(0.0, 0.02);
    }
    if (config_.style.scaled_residual_init) {
      const double std = 0.02 / std::sqrt(2.0 * config_.layers);
      for (auto& block : blocks_) {
        block->attention()->out->weight.normal_(0.0, std);
        block->mlp()->proj->weight.normal_(0.0, std);
      }
    }
  }

  Config config_;
  torch::nn::Embedding tok_{nullptr}, pos_{nullptr};
  std::vector<std::shared_ptr<Block>> blocks_;
  Norm norm_;
  torch::nn::Linear head_{nullptr};
};

Config read_shape(const induct::ModelContext& ctx, Style style, double default_dropout) {
  const auto& o = ctx.options;
  Config c;
  c.style = style;
  c.vocab = ctx.vocab_size;
  c.max_length = ctx.max_length;
  c.layers = induct::get_in_range(o, "layers", c.layers, 1, induct::kMaxModelDimension);
  c.d_model = induct::get_in_range(o, "d_model", c.d_model, 1, induct::kMaxModelDimension);
  c.heads = induct::get_in_range(o, "heads", c.heads, 1, induct::kMaxModelDimension);
  c.d_ff = induct::get_in_range(o, "d_ff", c.d_ff, 1, induct::kMaxModelDimension);
  c.dropout = o.get<double>("dropout", default_dropout);
  if (c.d_model % c.heads != 0)
    o.fail("d_model", "must be a positive multiple of heads (" + std::to_string(c.heads) + ")");
  if (!(c.dropout >= 0 && c.dropout < 1)) o.fail("dropout", "must be in [0, 1)");
  return c;
}

std::unique_ptr<induct::SequenceModel> make_gpt2(const induct::ModelContext& ctx) {
  Style s;
  s.learned_positions = true;
  s.tied = true;
  s.scaled_residual_init = true;
  s.activation = Activation::kGeluTanh;
  Config c = read_shape(ctx, s, 0.1);
  // Positions past the longest trained sequence exist but stay untrained (docs/method.md section
  // 8).
  c.positions = ctx.options.get<long>("positions", ctx.max_length);
  if (c.positions < ctx.max_length)
    ctx.options.fail("positions", "must cover the longest sequence of the study (" +
                                      std::to_string(ctx.max_length) + " tokens)");
  return std::make_unique<Transformer>(c);
}

std::unique_ptr<induct::SequenceModel> make_llama(const induct::ModelContext& ctx) {
  Style s;
  s.rms_norm = true;
  s.swiglu = true;
  s.bias = false;
  s.rotary_fraction = 1.0;
  Config c = read_shape(ctx, s, 0.0);
  // Llama 3's base; the standard 10000 is one --set away.
  c.rope_theta = ctx.options.get<double>("rope_theta", 500000.0);
  c.norm_eps = ctx.options.get<double>("norm_eps", 1e-5);
  if ((c.d_model / c.heads) % 2 != 0)
    ctx.options.fail("d_model", "head size must be even for rotary");
  return std::make_unique<Transformer>(c);
}

std::unique_ptr<induct::SequenceModel> make_pythia(const induct::ModelContext& ctx) {
  Style s;
  s.parallel_residual = true;
  s.activation = Activation::kGelu;
  s.rotary_fraction = ctx.options.get<double>("rotary_pct", 0.25);
  Config c = read_shape(ctx, s, 0.0);
  c.rope_theta = ctx.options.get<double>("rope_theta", 10000.0);
  const double rotary = c.d_model / c.heads * s.rotary_fraction;
  if (!(s.rotary_fraction > 0 && s.rotary_fraction <= 1) || rotary < 2 ||
      static_cast<int64_t>(rotary) % 2 != 0)
    ctx.options.fail("rotary_pct", "must give an even number of rotary features per head");
  return std::make_unique<Transformer>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model(
      "gpt2",
      "GPT-2 transformer (layers=6, d_model=256, heads=4, d_ff=1024, dropout=0.1, positions)",
      make_gpt2);
  r.add_model(
      "llama",
      "Llama-3 style transformer (layers=6, d_model=256, heads=4, d_ff=1024, rope_theta=500000)",
      make_llama);
  r.add_model(
      "pythia",
      "Pythia / GPT-NeoX transformer (layers=6, d_model=256, heads=4, d_ff=1024, rotary_pct=0.25)",
      make_pythia);
}

}  // namespace

INDUCT_PLUGIN("transformer", "1.4.0", register_components)
