// Mamba from a checkpoint folder in mamba_ssm's layout (or Hugging Face's MambaForCausalLM):
// the shape from config.json, the names of model.safetensors (docs/models.md, "Pretrained
// weights").
#pragma once

#include <induct/checkpoint.hpp>
#include <string>

#include "blocks/mamba_block.hpp"

namespace induct::mamba {

// The model's shape from config.json (mamba_ssm's defaults where its ssm_cfg leaves a size
// out), for a vocabulary of `vocab` tokens; the head tied to the embedding.
blocks::MambaConfig config_of(const Checkpoint& checkpoint, int64_t vocab);

// Where each of our parameters is in the checkpoint: every block and the final norm; the
// embedding is the task's own (kept as initialised).
ParameterSource source_of(const std::string& name);

}  // namespace induct::mamba
