// Reading pretrained weights a plugin loads into its model: a local Hugging Face checkpoint
// folder (config.json and model.safetensors). Nothing is downloaded.
#pragma once

#include <torch/types.h>

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

}  // namespace induct
