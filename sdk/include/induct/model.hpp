// The SequenceModel interface: a causal map from tokens to next-token logits.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>

#include "induct/export.hpp"
#include "induct/hooks.hpp"
#include "induct/options.hpp"

namespace induct {

// forward(tokens [B, T] int64) -> logits [B, T, V] float, where V = ModelContext::vocab_size.
// Causal: logits at position t depend only on tokens 0..t. The host pads batches at the end
// with ModelContext::pad_token, so a causal model needs no mask. The host owns the optimizer
// and the training loop; a model only computes. train()/eval() switch dropout as usual.
// A model passes its layer outputs through `hooks` (induct/hooks.hpp); one that does not still
// runs every study (only layer readings need hooks).
class INDUCT_SDK_API SequenceModel : public torch::nn::Module {
 public:
  ~SequenceModel() override;
  virtual torch::Tensor forward(const torch::Tensor& tokens) = 0;

  Hooks hooks;
};

// The largest width, depth or state size the built-in models accept (get_in_range): far past
// any study (the paper's largest is 1024), and small enough that a typo is an error, not an
// allocation that takes the machine's memory.
constexpr long kMaxModelDimension = 65'536;

// What the host gives a model factory. The host seeds torch's default generator with
// `seed` just before calling the factory, so initialisation drawn from it is reproducible.
struct ModelContext {
  int64_t vocab_size = 0;
  // The longest sequence (in tokens) the model will ever be given in this study, training
  // and evaluation included (e.g. 2L for CoT, 8L for length generalization of CoT at 4L).
  int64_t max_length = 0;
  int64_t pad_token = 0;
  torch::Device device = torch::kCPU;
  uint64_t seed = 0;
  // The model's section of the study file (e.g. `model: {name: lstm, hidden: 256}`).
  Options options;
};

}  // namespace induct
