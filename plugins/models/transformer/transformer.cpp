// Decoder-only transformers of the paper (docs/method.md section 8), one block class in three
// styles:
//   gpt2:   learned absolute positions, pre-LayerNorm, GELU (tanh), biases, tied embedding and
//           head, dropout 0.1 in training.
//   llama:  RMSNorm, rotary on the whole head, SwiGLU, no biases, no dropout, untied head.
//   pythia: GPT-NeoX: parallel residual x + attn(ln1 x) + mlp(ln2 x), LayerNorm, rotary on 25%
//           of each head, exact GELU, biases, untied head.
// The block is plugins/models/blocks/transformer_block.hpp (shared with the hybrid plugin);
// attention, rotary, RMSNorm and the MLPs are the SDK's shared blocks (induct/nn).
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>

#include <algorithm>
#include <cmath>
#include <induct/checkpoint.hpp>
#include <induct/model.hpp>
#include <induct/nn/linear.hpp>
#include <induct/plugin.hpp>
#include <map>
#include <stdexcept>

#include "blocks/transformer_block.hpp"
#include "pretrained.hpp"

namespace {

using induct::blocks::Norm;
using induct::blocks::Style;
using induct::nn::Activation;
using Config = induct::blocks::TransformerConfig;
using Block = induct::blocks::TransformerBlock;

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
    for (auto& p : named_parameters()) Block::initialise_parameter(p.key(), p.value());
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

// Pythia from a Hugging Face GPT-NeoX checkpoint folder (pretrained.hpp); the task's tokens
// get a fresh embedding and head. `freeze_layers: k` keeps the first k blocks as loaded.
std::unique_ptr<induct::SequenceModel> load_pythia(const induct::ModelContext& ctx, Style s) {
  const auto& o = ctx.options;
  const auto folder = o.get_folder("pretrained", {"config.json", "model.safetensors"});
  for (const char* key : {"layers", "d_model", "heads", "d_ff", "rotary_pct", "rope_theta"})
    if (o.has(key)) o.fail(key, "is set by the checkpoint's config.json (pretrained)");
  std::unique_ptr<Transformer> model;
  try {
    const induct::Checkpoint checkpoint = induct::read_checkpoint(folder);
    Config c = induct::pythia::config_of(checkpoint, s, ctx.vocab_size, ctx.max_length);
    c.dropout = o.get<double>("dropout", 0.0);
    const int64_t freeze = induct::get_in_range(o, "freeze_layers", 0, 0, c.layers);
    model = std::make_unique<Transformer>(c);
    induct::load_parameters(*model, checkpoint, induct::pythia::sources(c), freeze);
  } catch (const induct::ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    o.fail("pretrained", e.what());
  }
  return model;
}

std::unique_ptr<induct::SequenceModel> make_pythia(const induct::ModelContext& ctx) {
  Style s;
  s.parallel_residual = true;
  s.activation = Activation::kGelu;
  if (ctx.options.has("pretrained")) return load_pythia(ctx, s);
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
      "Pythia / GPT-NeoX transformer (layers=6, d_model=256, heads=4, d_ff=1024, rotary_pct=0.25; "
      "pretrained: a Hugging Face checkpoint folder, freeze_layers)",
      make_pythia);
}

}  // namespace

INDUCT_PLUGIN("transformer", "1.4.0", register_components)
