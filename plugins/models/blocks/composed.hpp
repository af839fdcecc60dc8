// What the composed models (the hybrid and looped plugins) share: one letter per block (A =
// attention, a Llama block: pre-RMSNorm causal self-attention with rotary positions, SwiGLU
// MLP; M = Mamba; 2 = Mamba-2), the shape common to the blocks, and each kind's options read
// from its section (attention, mamba, mamba2: the block readers of the models' own plugins).
// Each block is initialised as in its own model (transformer blocks N(0, 0.02) with zero biases
// and unit norms; Mamba blocks by their reference initialisation, out_proj scaled by
// 1/sqrt(depth) with depth the pattern's length or the number of loops).
#pragma once

#include <induct/hooks.hpp>
#include <induct/model.hpp>
#include <induct/options.hpp>
#include <memory>
#include <string>

#include "blocks/mamba2_block.hpp"
#include "blocks/mamba_block.hpp"
#include "blocks/transformer_block.hpp"

namespace induct::blocks {

// The shape shared by the layers and each kind's own options (read only for kinds in use).
struct Shape {
  int64_t vocab = 0, d_model = 256;
  bool tie_embeddings = true;
  TransformerConfig attention;
  MambaConfig mamba;
  Mamba2Config mamba2;
};

inline const char* kind_name(char kind) {
  return kind == 'A' ? "attn" : kind == 'M' ? "mamba" : "mamba2";
}

inline std::shared_ptr<torch::nn::Module> make_block(char kind, const Shape& s) {
  if (kind == 'A') {
    auto block = std::make_shared<TransformerBlock>(s.attention);
    block->initialise();
    return block;
  }
  if (kind == 'M') return std::make_shared<MambaBlock>(s.mamba);
  return std::make_shared<Mamba2Block>(s.mamba2);
}

// The block's output; a Mamba or Mamba-2 block's convolution is the inner hook point
// `<point>.conv`.
inline torch::Tensor run_block(char kind, torch::nn::Module& block, const torch::Tensor& x,
                               const induct::Hooks& hooks, const std::string& point) {
  if (kind == 'A') return static_cast<TransformerBlock&>(block).forward(x);
  if (kind == 'M') return static_cast<MambaBlock&>(block).forward(x, &hooks, point);
  return static_cast<Mamba2Block&>(block).forward(x, &hooks, point);
}

// The shape and the options of each kind in `kinds`, at `depth` layers.
inline Shape read_shape(const induct::ModelContext& ctx, const std::string& kinds, int64_t depth) {
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
  // A Mamba or Mamba-2 kind: the shared shape, then its section by its block's own reader.
  const auto state_space = [&](char kind, const char* section, auto& c) {
    if (kinds.find(kind) == std::string::npos) return;
    c.vocab = s.vocab;
    c.layers = depth;
    c.d_model = s.d_model;
    read_block_options(o.section(section), c);
  };
  state_space('M', "mamba", s.mamba);
  state_space('2', "mamba2", s.mamba2);
  return s;
}

inline void check_kinds(const induct::Options& o, const std::string& key,
                        const std::string& kinds) {
  if (kinds.empty()) o.fail(key, "is empty; give one letter per layer: A, M or 2");
  if (kinds.size() > 256) o.fail(key, "has more than 256 layers");
  for (char kind : kinds)
    if (kind != 'A' && kind != 'M' && kind != '2')
      o.fail(key, std::string("has '") + kind +
                      "'; each layer is A (attention), M (Mamba) or 2 (Mamba-2)");
}

}  // namespace induct::blocks
