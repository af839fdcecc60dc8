// Mamba (Gu and Dao 2023) at the paper's size: pre-RMSNorm residual blocks around the
// selective-scan mixer, final RMSNorm, head tied to the embedding (Mamba's default).
// Initialisation as the reference implementation: A_log = log(1..N), D = 1, dt bias the inverse
// softplus of a log-uniform dt in [dt_min, dt_max], dt_proj weights uniform(+-dt_rank^-0.5),
// embedding N(0, 0.02), out_proj scaled by 1/sqrt(layers). The scan is the SDK's.
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/checkpoint.hpp>
#include <induct/model.hpp>
#include <induct/nn/conv.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/norms.hpp>
#include <induct/nn/scan.hpp>
#include <induct/plugin.hpp>
#include <stdexcept>

#include "blocks/mamba_block.hpp"
#include "blocks/stack.hpp"
#include "pretrained.hpp"

namespace {

using Config = induct::blocks::MambaConfig;
using induct::blocks::MambaBlock;

class Mamba final : public induct::blocks::Stack {
 public:
  explicit Mamba(const Config& c) : Stack(c.vocab, c.d_model) {
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      blocks_.push_back(std::make_shared<MambaBlock>(c));
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
  std::vector<std::shared_ptr<MambaBlock>> blocks_;
};

// Mamba from a checkpoint folder (pretrained.hpp); the task's tokens get a fresh embedding.
// `freeze_layers: k` keeps the first k blocks as loaded.
std::unique_ptr<induct::SequenceModel> load(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const auto folder = o.get_folder("pretrained", {"config.json", "model.safetensors"});
  for (const char* key : {"layers", "d_model", "expand", "d_state", "d_conv", "dt_rank"})
    if (o.has(key)) o.fail(key, "is set by the checkpoint's config.json (pretrained)");
  std::unique_ptr<Mamba> model;
  try {
    const induct::Checkpoint checkpoint = induct::read_checkpoint(folder);
    const Config c = induct::mamba::config_of(checkpoint, ctx.vocab_size);
    const int64_t freeze = induct::get_in_range(o, "freeze_layers", 0, 0, c.layers);
    model = std::make_unique<Mamba>(c);
    induct::load_parameters(*model, checkpoint, induct::mamba::source_of, freeze);
  } catch (const induct::ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    o.fail("pretrained", e.what());
  }
  return model;
}

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  if (o.has("pretrained")) return load(ctx);
  Config c;
  c.vocab = ctx.vocab_size;
  c.layers = induct::get_in_range(o, "layers", c.layers, 1, induct::kMaxModelDimension);
  c.d_model = induct::get_in_range(o, "d_model", c.d_model, 1, induct::kMaxModelDimension);
  induct::blocks::read_block_options(o, c);
  c.tie_embeddings = o.get<bool>("tie_embeddings", c.tie_embeddings);
  return std::make_unique<Mamba>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("mamba",
              "Mamba (layers=6, d_model=256, expand=2, d_state=64, d_conv=4, dt_rank=16, "
              "tie_embeddings=true; pretrained: a mamba_ssm or Hugging Face checkpoint folder, "
              "freeze_layers)",
              make);
}

}  // namespace

INDUCT_PLUGIN("mamba", "1.2.0", register_components)
