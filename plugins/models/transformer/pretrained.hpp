// Pythia from a Hugging Face GPT-NeoX checkpoint folder: the shape from config.json, the names
// of model.safetensors (docs/models.md, "Pretrained weights").
#pragma once

#include <induct/checkpoint.hpp>
#include <string>

#include "blocks/transformer_block.hpp"

namespace induct::pythia {

// The model's shape from config.json in Pythia's style `style` (its rotary fraction from the
// checkpoint), for `vocab` tokens and sequences up to `max_length`. Throws std::runtime_error
// naming config.json when it is not Pythia's block or its sizes make no model.
blocks::TransformerConfig config_of(const Checkpoint& checkpoint, blocks::Style style,
                                    int64_t vocab, int64_t max_length);

// Where each of our parameters is in the checkpoint (for a model of shape `c`): every block and
// the final norm; the embedding and the head are the task's own (kept as initialised). GPT-NeoX
// orders the fused q, k, v rows per head; ours are all q, then all k, then all v.
std::function<ParameterSource(const std::string&)> sources(const blocks::TransformerConfig& c);

}  // namespace induct::pythia
