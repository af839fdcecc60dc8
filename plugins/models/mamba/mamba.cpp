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

// Mamba from a checkpoint folder in mamba_ssm's layout (or Hugging Face's MambaForCausalLM):
// its shape from config.json, every block and the final norm from model.safetensors; the task's
// tokens get a fresh embedding (docs/models.md, "Pretrained weights"). `freeze_layers: k` keeps
// the first k blocks as loaded.
std::unique_ptr<induct::SequenceModel> load(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const auto folder = o.get_folder("pretrained", {"config.json", "model.safetensors"});
  for (const char* key : {"layers", "d_model", "expand", "d_state", "d_conv", "dt_rank"})
    if (o.has(key)) o.fail(key, "is set by the checkpoint's config.json (pretrained)");
  std::unique_ptr<Mamba> model;
  try {
    const induct::Checkpoint checkpoint = induct::read_checkpoint(folder);
    Config c;
    c.vocab = ctx.vocab_size;
    c.layers = checkpoint.integer({"n_layer", "num_hidden_layers"});
    c.d_model = checkpoint.integer({"d_model", "hidden_size"});
    // mamba_ssm's defaults where its ssm_cfg leaves a size out.
    const auto size = [&](std::initializer_list<const char*> keys, long fallback) {
      for (const char* key : keys)
        if (checkpoint.has(key)) return checkpoint.integer({key});
      return fallback;
    };
    c.d_state = size({"ssm_cfg.d_state", "state_size"}, 16);
    c.d_conv = size({"ssm_cfg.d_conv", "conv_kernel"}, 4);
    c.expand = size({"ssm_cfg.expand", "expand"}, 2);
    const long automatic = (c.d_model + 15) / 16;  // "auto": ceil(d_model / 16)
    c.dt_rank = automatic;
    for (const char* key : {"ssm_cfg.dt_rank", "time_step_rank"})
      if (checkpoint.has(key) && checkpoint.text({key}) != "auto")
        c.dt_rank = checkpoint.integer({key});
    c.tie_embeddings = true;
    if (c.layers < 1 || c.d_model < 1 || c.d_state < 1 || c.d_conv < 1 || c.expand < 1)
      throw std::runtime_error(folder + "/config.json: sizes that do not make a model");
    const int64_t freeze = induct::get_in_range(o, "freeze_layers", 0, 0, c.layers);
    model = std::make_unique<Mamba>(c);
    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      const std::string& name = p.key();
      if (name == "embed.weight") continue;  // the task's own tokens
      if (name == "norm.weight") {
        p.value().copy_(checkpoint.tensor("backbone.norm_f.weight", p.value().sizes()));
        continue;
      }
      // blocks.<i>.<rest>: the block's norm, or its mixer's (conv is mamba_ssm's conv1d).
      const size_t dot = name.find('.', 7);
      const std::string layer = name.substr(7, dot - 7);
      std::string rest = name.substr(dot + 1);
      if (rest.rfind("conv.", 0) == 0) rest = "conv1d." + rest.substr(5);
      const std::string source =
          "backbone.layers." + layer + "." + (rest == "norm.weight" ? rest : "mixer." + rest);
      p.value().copy_(checkpoint.tensor(source, p.value().sizes()));
      if (std::stol(layer) < freeze) p.value().set_requires_grad(false);
    }
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
  c.expand = induct::get_in_range(o, "expand", c.expand, 1, induct::kMaxModelDimension);
  c.d_state = induct::get_in_range(o, "d_state", c.d_state, 1, induct::kMaxModelDimension);
  c.d_conv = induct::get_in_range(o, "d_conv", c.d_conv, 1, induct::kMaxModelDimension);
  c.dt_rank = induct::get_in_range(o, "dt_rank", c.dt_rank, 1, induct::kMaxModelDimension);
  c.dt_min = o.get<double>("dt_min", c.dt_min);
  c.dt_max = o.get<double>("dt_max", c.dt_max);
  c.tie_embeddings = o.get<bool>("tie_embeddings", c.tie_embeddings);
  if (!(c.dt_min > 0 && c.dt_min < c.dt_max)) o.fail("dt_min", "must satisfy 0 < dt_min < dt_max");
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
