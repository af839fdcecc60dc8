// Mamba-2 (Dao and Gu 2024): pre-RMSNorm residual blocks around the SSD mixer, final RMSNorm,
// head tied to the embedding, as the reference implementation's Mamba2 module and its
// language model. One input projection gives z, x, B, C and dt; a depthwise causal convolution
// with SiLU runs over (x, B, C); the scan has one scalar decay per head, exp(dt A); the output
// is RMSNorm(y * SiLU(z)) (the gated norm, normalising after the gate) and out_proj.
// Initialisation as the reference: A = uniform(1, 16) per head (stored as A_log), D = 1, the
// dt bias the inverse softplus of a log-uniform dt in [dt_min, dt_max] (floor 1e-4),
// embedding N(0, 0.02), out_proj scaled by 1/sqrt(layers). The scan is the SDK's ssd_scan.
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/model.hpp>
#include <induct/nn/conv.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/norms.hpp>
#include <induct/nn/ssd.hpp>
#include <induct/plugin.hpp>

#include "blocks/mamba2_block.hpp"
#include "blocks/stack.hpp"

namespace {

using Config = induct::blocks::Mamba2Config;
using induct::blocks::Mamba2Block;

class Mamba2 final : public induct::blocks::Stack {
 public:
  explicit Mamba2(const Config& c) : Stack(c.vocab, c.d_model) {
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      blocks_.push_back(std::make_shared<Mamba2Block>(c));
      list->push_back(blocks_.back());
    }
    finish(c.vocab, c.d_model,
           c.tie_embeddings ? induct::blocks::Head::kTied : induct::blocks::Head::kLinear);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto x = embed(tokens);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const std::string point = "block." + std::to_string(i);
      x = hooks(point, blocks_[i]->forward(x, &hooks, point));
    }
    return head(x);
  }

 private:
  std::vector<std::shared_ptr<Mamba2Block>> blocks_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const long max = induct::kMaxModelDimension;
  Config c;
  c.vocab = ctx.vocab_size;
  c.layers = induct::get_in_range(o, "layers", c.layers, 1, max);
  c.d_model = induct::get_in_range(o, "d_model", c.d_model, 1, max);
  induct::blocks::read_block_options(o, c);
  c.tie_embeddings = o.get<bool>("tie_embeddings", c.tie_embeddings);
  return std::make_unique<Mamba2>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("mamba2",
              "Mamba-2, SSD mixer (layers=6, d_model=256, expand=2, headdim=64, d_state=128, "
              "ngroups=1, d_conv=4, chunk_size=256, tie_embeddings=true)",
              make);
}

}  // namespace

INDUCT_PLUGIN("mamba2", "1.1.0", register_components)
