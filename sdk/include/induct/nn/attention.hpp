// Causal multi-head self-attention and rotary position embeddings.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// Rotary position embedding (Su et al. 2021) in the rotate-half convention of GPT-NeoX and
// Llama: the first `rotary_dim` features of each head are split in two halves (x1, x2) that
// rotate as (x1 cos - x2 sin, x2 cos + x1 sin) at frequencies theta^(-2i/rotary_dim);
// the remaining features pass unchanged.
struct INDUCT_SDK_API RotaryTables {
  torch::Tensor cos, sin;  // [max_length, rotary_dim]
};
RotaryTables INDUCT_SDK_API rotary_tables(int64_t rotary_dim, int64_t max_length, double theta);
// x: [B, H, T, head_dim]; cos, sin: [>= T, rotary_dim].
torch::Tensor INDUCT_SDK_API apply_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                                          const torch::Tensor& sin);

struct AttentionOptions {
  int64_t dim = 256;
  int64_t heads = 4;
  bool bias = true;
  double dropout = 0.0;     // on the attention weights and on the output
  int64_t rotary_dim = 0;   // features of each head that rotate (0: no rotary)
  double rope_theta = 10000;
  int64_t max_length = 0;   // longest sequence (for the rotary tables)
};

// Fused q/k/v projection ("qkv": dim -> 3 dim, laid out [q | k | v], each [heads x head_dim]),
// rotary on q and k when rotary_dim > 0, causal softmax attention scaled by 1/sqrt(head_dim),
// dropout on the weights, output projection ("out"), dropout on the output. The causal mask
// and rotary tables are buffers sized for max_length.
class INDUCT_SDK_API CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const AttentionOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, dim] -> [B, T, dim]

  torch::nn::Linear qkv{nullptr}, out{nullptr};

 private:
  AttentionOptions options_;
  torch::Tensor mask_, cos_, sin_;
};
TORCH_MODULE(CausalSelfAttention);

}  // namespace induct::nn
