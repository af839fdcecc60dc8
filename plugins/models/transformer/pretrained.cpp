#include "pretrained.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace induct::pythia {

blocks::TransformerConfig config_of(const Checkpoint& checkpoint, blocks::Style style,
                                    int64_t vocab, int64_t max_length) {
  const std::string& folder = checkpoint.folder;
  if (checkpoint.text({"use_parallel_residual"}) != "true" ||
      checkpoint.text({"hidden_act"}) != "gelu")
    throw std::runtime_error(folder +
                             "/config.json: not Pythia's block (use_parallel_residual: true, "
                             "hidden_act: gelu)");
  blocks::TransformerConfig c;
  style.rotary_fraction = checkpoint.number({"rotary_pct"});
  c.style = style;
  c.vocab = vocab;
  c.max_length = max_length;
  c.layers = checkpoint.integer({"num_hidden_layers"});
  c.d_model = checkpoint.integer({"hidden_size"});
  c.heads = checkpoint.integer({"num_attention_heads"});
  c.d_ff = checkpoint.integer({"intermediate_size"});
  c.rope_theta = checkpoint.number({"rotary_emb_base"});
  c.norm_eps = checkpoint.number({"layer_norm_eps"});
  const double rotary = c.d_model / std::max<int64_t>(c.heads, 1) * style.rotary_fraction;
  if (c.layers < 1 || c.d_model < 1 || c.heads < 1 || c.d_model % c.heads != 0 || c.d_ff < 1 ||
      !(style.rotary_fraction > 0 && style.rotary_fraction <= 1) || rotary < 2 ||
      static_cast<int64_t>(rotary) % 2 != 0)
    throw std::runtime_error(folder + "/config.json: sizes that do not make a Pythia model");
  return c;
}

std::function<ParameterSource(const std::string&)> sources(const blocks::TransformerConfig& c) {
  const int64_t d = c.d_model, H = c.heads, dh = d / H;
  return [d, H, dh](const std::string& name) -> ParameterSource {
    if (name == "tok.weight" || name == "head.weight") return {};  // the task's own tokens
    if (name.rfind("norm.", 0) == 0) return {"gpt_neox.final_layer_norm." + name.substr(5)};
    static const std::map<std::string, std::string> names = {
        {"norm1", "input_layernorm"},
        {"norm2", "post_attention_layernorm"},
        {"attn.qkv", "attention.query_key_value"},
        {"attn.out", "attention.dense"},
        {"mlp.fc", "mlp.dense_h_to_4h"},
        {"mlp.proj", "mlp.dense_4h_to_h"}};
    const auto [layer, rest] = block_of(name);  // blocks.<i>.<rest>
    const std::string module = rest.substr(0, rest.rfind('.')),
                      leaf = rest.substr(rest.rfind('.') + 1);
    const auto hf = names.find(module);
    if (layer < 0 || hf == names.end())
      throw std::runtime_error("no checkpoint tensor for " + name);
    ParameterSource source{
        "gpt_neox.layers." + std::to_string(layer) + "." + hf->second + "." + leaf, layer};
    if (module == "attn.qkv")
      source.convert = [d, H, dh, weight = leaf == "weight"](const torch::Tensor& t) {
        const auto per_head = weight ? t.view({H, 3, dh, d}) : t.view({H, 3, dh});
        return per_head.transpose(0, 1).reshape(t.sizes());
      };
    return source;
  };
}

}  // namespace induct::pythia
