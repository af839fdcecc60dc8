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

// Causal softmax attention of q over k and v, scaled by 1/sqrt(head_dim), with dropout on the
// weights when training: q, k, v [B, heads, T, head_dim] -> [B, T, heads * head_dim] (heads
// merged). On the CPU one autograd node with its own backward (loops over each (batch, head)'s
// causal triangle; LibTorch's CPU bmm runs one select + mm per batch entry); `fused = false`,
// and other devices, compose LibTorch operations instead. The dropout mask: in float on the
// CPU the SDK's (elementwise.hpp), otherwise LibTorch's dropout's draws on [B, heads, T, T].
torch::Tensor INDUCT_SDK_API causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v, double dropout, bool training,
                                              bool fused = true);

// The same on the fused projection's output: qkv [B, T, 3 * heads * head_dim], each token laid
// out [q | k | v] and each of those [heads x head_dim]; with rotary tables (cos, sin
// [>= T, rotary_dim], as rotary_tables makes them) q and k rotate first, as apply_rotary.
// -> [B, T, heads * head_dim]. On the CPU (float and double) one autograd node whose gradient
// is one [B, T, 3 * heads * head_dim] tensor: no split of q, k and v, rotary pass or stacking
// of their gradients as separate operations. Elsewhere LibTorch operations.
torch::Tensor INDUCT_SDK_API causal_attention_qkv(const torch::Tensor& qkv, int64_t heads,
                                                  double dropout, bool training,
                                                  const torch::Tensor& cos = {},
                                                  const torch::Tensor& sin = {});

struct AttentionOptions {
  int64_t dim = 256;
  int64_t heads = 4;
  bool bias = true;
  double dropout = 0.0;    // on the attention weights and on the output
  int64_t rotary_dim = 0;  // features of each head that rotate (0: no rotary)
  double rope_theta = 10000;
  int64_t max_length = 0;  // longest sequence (for the rotary tables)
};

// Fused q/k/v projection ("qkv": dim -> 3 dim, laid out [q | k | v], each [heads x head_dim]),
// rotary on q and k when rotary_dim > 0, causal_attention (dropout on the weights), output
// projection ("out"), dropout on the output. The rotary tables are buffers sized for
// max_length.
class INDUCT_SDK_API CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const AttentionOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, dim] -> [B, T, dim]

  torch::nn::Linear qkv{nullptr}, out{nullptr};

 private:
  AttentionOptions options_;
  torch::Tensor cos_, sin_;
};
TORCH_MODULE(CausalSelfAttention);

}  // namespace induct::nn
