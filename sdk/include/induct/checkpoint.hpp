// Reading pretrained weights a plugin loads into its model: a local Hugging Face checkpoint
// folder (config.json and model.safetensors). Nothing is downloaded.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>

#include "induct/export.hpp"

namespace induct {

// A checkpoint folder: its configuration and its tensors (as float32 on the CPU).
struct INDUCT_SDK_API Checkpoint {
  std::string folder;
  // config.json's values, each as its JSON text ("768", "true", "\"gelu\"" reads as gelu);
  // nested objects flattened with dots ("ssm_cfg.d_state").
  std::map<std::string, std::string> config;
  std::map<std::string, torch::Tensor> tensors;

  // A config value as an integer, a number or a string; a missing key or another type throws
  // std::runtime_error naming the folder and the key. The first of `keys` present is read.
  long integer(std::initializer_list<const char*> keys) const;
  double number(std::initializer_list<const char*> keys) const;
  std::string text(std::initializer_list<const char*> keys) const;
  bool has(const std::string& key) const { return config.count(key) > 0; }

  // The tensor `name` with the given shape; a missing tensor or another shape throws
  // std::runtime_error naming the folder, the tensor and both shapes.
  const torch::Tensor& tensor(const std::string& name, at::IntArrayRef shape) const;
};

// Reads DIR/config.json and DIR/model.safetensors (the format: an 8-byte little-endian header
// length, a JSON header of {name: {dtype, shape, data_offsets}}, then the raw little-endian
// data; F32, F16 and BF16 read, as float32). A missing file, a header that is not such JSON, a
// tensor whose offsets fall outside the file or disagree with its shape, or another dtype throws
// std::runtime_error naming the file and the reason.
INDUCT_SDK_API Checkpoint read_checkpoint(const std::string& folder);

// The tensors of one safetensors file (as read_checkpoint reads model.safetensors).
INDUCT_SDK_API std::map<std::string, torch::Tensor> read_safetensors(const std::string& path);

// Where one of the model's parameters comes from in a checkpoint: a family's name mapping
// returns it for each of the model's parameter names.
struct ParameterSource {
  std::string tensor;  // the checkpoint's tensor; "" keeps the parameter as initialised
  int64_t layer = -1;  // its block (kept as loaded when below freeze_layers); -1: none
  // The checkpoint's tensor (already checked to have the parameter's shape) as the model lays
  // it out; empty: as it is.
  std::function<torch::Tensor(const torch::Tensor&)> convert = nullptr;
};

// "blocks.3.attn.out.weight" with prefix "blocks." -> {3, "attn.out.weight"}; {-1, ""} when
// `name` does not start with the prefix and a block number.
INDUCT_SDK_API std::pair<int64_t, std::string> block_of(const std::string& name,
                                                        const std::string& prefix = "blocks.");

// Fills every parameter of `model` from `checkpoint` through `source` (a mapping that throws
// std::runtime_error for a name it cannot place), without recording gradients; the parameters
// of blocks below `freeze_layers` stop requiring gradients. Throws std::runtime_error naming
// the folder, the tensor and the shapes where a tensor is missing or of another shape.
INDUCT_SDK_API void load_parameters(
    torch::nn::Module& model, const Checkpoint& checkpoint,
    const std::function<ParameterSource(const std::string& name)>& source,
    int64_t freeze_layers = 0);

}  // namespace induct
