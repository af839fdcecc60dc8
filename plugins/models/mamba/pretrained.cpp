#include "pretrained.hpp"

#include <stdexcept>

namespace induct::mamba {

blocks::MambaConfig config_of(const Checkpoint& checkpoint, int64_t vocab) {
  blocks::MambaConfig c;
  c.vocab = vocab;
  c.layers = checkpoint.integer({"n_layer", "num_hidden_layers"});
  c.d_model = checkpoint.integer({"d_model", "hidden_size"});
  const auto size = [&](std::initializer_list<const char*> keys, long fallback) {
    for (const char* key : keys)
      if (checkpoint.has(key)) return checkpoint.integer({key});
    return fallback;
  };
  c.d_state = size({"ssm_cfg.d_state", "state_size"}, 16);
  c.d_conv = size({"ssm_cfg.d_conv", "conv_kernel"}, 4);
  c.expand = size({"ssm_cfg.expand", "expand"}, 2);
  c.dt_rank = (c.d_model + 15) / 16;  // "auto": ceil(d_model / 16)
  for (const char* key : {"ssm_cfg.dt_rank", "time_step_rank"})
    if (checkpoint.has(key) && checkpoint.text({key}) != "auto")
      c.dt_rank = checkpoint.integer({key});
  c.tie_embeddings = true;
  if (c.layers < 1 || c.d_model < 1 || c.d_state < 1 || c.d_conv < 1 || c.expand < 1)
    throw std::runtime_error(checkpoint.folder + "/config.json: sizes that do not make a model");
  return c;
}

ParameterSource source_of(const std::string& name) {
  if (name == "embed.weight") return {};  // the task's own tokens
  if (name == "norm.weight") return {"backbone.norm_f.weight"};
  // blocks.<i>.<rest>: the block's norm, or its mixer's (conv is mamba_ssm's conv1d).
  auto [layer, rest] = block_of(name);
  if (layer < 0) throw std::runtime_error("no checkpoint tensor for " + name);
  if (rest.rfind("conv.", 0) == 0) rest = "conv1d." + rest.substr(5);
  return {"backbone.layers." + std::to_string(layer) + "." +
              (rest == "norm.weight" ? rest : "mixer." + rest),
          layer};
}

}  // namespace induct::mamba
