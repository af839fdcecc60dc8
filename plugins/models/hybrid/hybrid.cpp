// Composed models from the in-tree blocks (plugins/models/blocks/):
//   hybrid: a stack whose `pattern` picks each layer's block: A = attention (a Llama block:
//           pre-RMSNorm causal self-attention with rotary positions, SwiGLU MLP), M = Mamba,
//           2 = Mamba-2. Embedding N(0, 0.02), final RMSNorm, head tied to the embedding (as
//           Mamba's). Hook points "<kind>.<layer>": attn.1, mamba.0, mamba2.3, and embed, norm.
//   looped: one block (`block`: A, M or 2) applied `loops` times with its weights tied; with
//           `inject: true` the embedding is added before every loop after the first
//           (z_1 = f(e), z_{i+1} = f(z_i + e)). Hook points loop.0, loop.1, ..., embed, norm.
// Each block is initialised as in its own model (transformer blocks N(0, 0.02) with zero biases
// and unit norms; Mamba blocks by their reference initialisation, out_proj scaled by
// 1/sqrt(depth) with depth the pattern's length or the number of loops).
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>

#include <induct/model.hpp>
#include <induct/nn/linear.hpp>
#include <induct/plugin.hpp>
#include <string>
#include <vector>

#include "blocks/mamba2_block.hpp"
#include "blocks/mamba_block.hpp"
#include "blocks/stack.hpp"
#include "blocks/transformer_block.hpp"

namespace {

// The shape shared by the layers and each kind's own options (read only for kinds in use).
struct Shape {
  int64_t vocab = 0, d_model = 256;
  bool tie_embeddings = true;
  induct::blocks::TransformerConfig attention;
  induct::blocks::MambaConfig mamba;
  induct::blocks::Mamba2Config mamba2;
};

const char* kind_name(char kind) { return kind == 'A' ? "attn" : kind == 'M' ? "mamba" : "mamba2"; }

std::shared_ptr<torch::nn::Module> make_block(char kind, const Shape& s) {
  if (kind == 'A') {
    auto block = std::make_shared<induct::blocks::TransformerBlock>(s.attention);
    block->initialise();
    return block;
  }
  if (kind == 'M') return std::make_shared<induct::blocks::MambaBlock>(s.mamba);
  return std::make_shared<induct::blocks::Mamba2Block>(s.mamba2);
}

// The block's output; a Mamba or Mamba-2 block's convolution is the inner hook point
// `<point>.conv`.
torch::Tensor run_block(char kind, torch::nn::Module& block, const torch::Tensor& x,
                        const induct::Hooks& hooks, const std::string& point) {
  if (kind == 'A') return static_cast<induct::blocks::TransformerBlock&>(block).forward(x);
  if (kind == 'M') return static_cast<induct::blocks::MambaBlock&>(block).forward(x, &hooks, point);
  return static_cast<induct::blocks::Mamba2Block&>(block).forward(x, &hooks, point);
}

class Hybrid final : public induct::blocks::Stack {
 public:
  Hybrid(const Shape& s, std::string pattern)
      : Stack(s.vocab, s.d_model), pattern_(std::move(pattern)) {
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (char kind : pattern_) {
      blocks_.push_back(make_block(kind, s));
      list->push_back(blocks_.back());
    }
    finish(s.vocab, s.d_model,
           s.tie_embeddings ? induct::blocks::Head::kTied : induct::blocks::Head::kLinear);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto x = embed(tokens);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const std::string point = std::string(kind_name(pattern_[i])) + "." + std::to_string(i);
      x = hooks(point, run_block(pattern_[i], *blocks_[i], x, hooks, point));
    }
    return head(x);
  }

 private:
  std::string pattern_;
  std::vector<std::shared_ptr<torch::nn::Module>> blocks_;
};

class Looped final : public induct::blocks::Stack {
 public:
  Looped(const Shape& s, char kind, int64_t loops, bool inject)
      : Stack(s.vocab, s.d_model), kind_(kind), loops_(loops), inject_(inject) {
    block_ = register_module("block", make_block(kind, s));
    finish(s.vocab, s.d_model,
           s.tie_embeddings ? induct::blocks::Head::kTied : induct::blocks::Head::kLinear);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    const auto e = embed(tokens);
    auto z = e;
    for (int64_t i = 0; i < loops_; ++i) {
      const std::string point = "loop." + std::to_string(i);
      z = hooks(point, run_block(kind_, *block_, i > 0 && inject_ ? z + e : z, hooks, point));
    }
    return head(z);
  }

 private:
  char kind_;
  int64_t loops_;
  bool inject_;
  std::shared_ptr<torch::nn::Module> block_;
};

// The shape and the options of each kind in `kinds`, at `depth` layers.
Shape read_shape(const induct::ModelContext& ctx, const std::string& kinds, int64_t depth) {
  const auto& o = ctx.options;
  const long max = induct::kMaxModelDimension;
  Shape s;
  s.vocab = ctx.vocab_size;
  s.d_model = induct::get_in_range(o, "d_model", s.d_model, 1, max);
  s.tie_embeddings = o.get<bool>("tie_embeddings", s.tie_embeddings);
  if (kinds.find('A') != std::string::npos) {
    const auto a = o.section("attention");
    auto& c = s.attention;
    c.style.rms_norm = true;  // Llama's block
    c.style.swiglu = true;
    c.style.bias = false;
    c.style.rotary_fraction = 1.0;
    c.vocab = s.vocab;
    c.max_length = ctx.max_length;
    c.layers = depth;
    c.d_model = s.d_model;
    c.heads = induct::get_in_range(a, "heads", c.heads, 1, max);
    c.d_ff = induct::get_in_range(a, "d_ff", c.d_ff, 1, max);
    c.rope_theta = a.get<double>("rope_theta", 500000.0);
    if (c.d_model % c.heads != 0 || (c.d_model / c.heads) % 2 != 0)
      a.fail("heads", "must divide d_model (" + std::to_string(c.d_model) +
                          ") into heads of an even size (rotary)");
  }
  if (kinds.find('M') != std::string::npos) {
    const auto m = o.section("mamba");
    auto& c = s.mamba;
    c.vocab = s.vocab;
    c.layers = depth;
    c.d_model = s.d_model;
    c.expand = induct::get_in_range(m, "expand", c.expand, 1, max);
    c.d_state = induct::get_in_range(m, "d_state", c.d_state, 1, max);
    c.d_conv = induct::get_in_range(m, "d_conv", c.d_conv, 1, max);
    c.dt_rank = induct::get_in_range(m, "dt_rank", c.dt_rank, 1, max);
  }
  if (kinds.find('2') != std::string::npos) {
    const auto m = o.section("mamba2");
    auto& c = s.mamba2;
    c.vocab = s.vocab;
    c.layers = depth;
    c.d_model = s.d_model;
    c.expand = induct::get_in_range(m, "expand", c.expand, 1, max);
    c.headdim = induct::get_in_range(m, "headdim", c.headdim, 1, max);
    c.d_state = induct::get_in_range(m, "d_state", c.d_state, 1, max);
    c.ngroups = induct::get_in_range(m, "ngroups", c.ngroups, 1, max);
    c.d_conv = induct::get_in_range(m, "d_conv", c.d_conv, 1, max);
    c.chunk_size = induct::get_in_range(m, "chunk_size", c.chunk_size, 1, 4096);
    if (c.d_inner() % c.headdim != 0)
      m.fail("headdim", "must divide expand * d_model (" + std::to_string(c.d_inner()) + ")");
    if (c.heads() % c.ngroups != 0)
      m.fail("ngroups", "must divide the number of heads (" + std::to_string(c.heads()) + ")");
  }
  return s;
}

void check_kinds(const induct::Options& o, const std::string& key, const std::string& kinds) {
  if (kinds.empty()) o.fail(key, "is empty; give one letter per layer: A, M or 2");
  if (kinds.size() > 256) o.fail(key, "has more than 256 layers");
  for (char kind : kinds)
    if (kind != 'A' && kind != 'M' && kind != '2')
      o.fail(key, std::string("has '") + kind +
                      "'; each layer is A (attention), M (Mamba) or 2 (Mamba-2)");
}

std::unique_ptr<induct::SequenceModel> make_hybrid(const induct::ModelContext& ctx) {
  const auto pattern = ctx.options.get<std::string>("pattern", "MAMA");
  check_kinds(ctx.options, "pattern", pattern);
  const Shape s = read_shape(ctx, pattern, static_cast<int64_t>(pattern.size()));
  return std::make_unique<Hybrid>(s, pattern);
}

std::unique_ptr<induct::SequenceModel> make_looped(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const auto kind = o.get<std::string>("block", "A");
  if (kind.size() != 1) o.fail("block", "must be one letter: A (attention), M (Mamba) or 2");
  check_kinds(o, "block", kind);
  const auto loops = induct::get_in_range(o, "loops", 4, 1, 256);
  const bool inject = o.get<bool>("inject", false);
  const Shape s = read_shape(ctx, kind, loops);
  return std::make_unique<Looped>(s, kind[0], loops, inject);
}

void register_components(induct::Registrar& r) {
  r.add_model("hybrid",
              "attention / Mamba / Mamba-2 stack (pattern=MAMA: A attention, M Mamba, 2 Mamba-2; "
              "d_model=256, tie_embeddings=true; sections attention, mamba, mamba2 with their "
              "models' options)",
              make_hybrid);
  r.add_model("looped",
              "one weight-tied block applied `loops` times (block=A|M|2, loops=4, inject=false; "
              "d_model=256 and the block's section as hybrid's)",
              make_looped);
}

}  // namespace

INDUCT_PLUGIN("hybrid", "1.1.0", register_components)
