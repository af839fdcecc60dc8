// The delta-rule family of linear RNNs, in pre-RMSNorm residual blocks (mixer, then a SwiGLU
// MLP), final RMSNorm and a linear head, as flash-linear-attention's DeltaNet models:
//   DeltaNet (Schlag et al. 2021; Yang et al. 2024): per head a matrix state S [d_k, d_v],
//     S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,  o_t = S_t^T q_t,
//     beta_t = sigmoid(w_beta . x_t) in (0, 1): the transition's eigenvalue 1 - beta_t in (0, 1);
//   negative_eigenvalues (Grazzi et al. 2025): beta_t = 2 sigmoid(.) in (0, 2), so that the
//     eigenvalue reaches (-1, 1) and a head can flip a sign (parity);
//   gate (Gated DeltaNet, Yang et al. 2025): the state decays first, S <- exp(g_t) S with
//     g_t = -exp(A_log) softplus(w_a . x_t + dt_bias), and the output is gated by SiLU(W_g x_t);
//   householder: n (DeltaProduct, Siems et al. 2025): n delta steps per token, each with its own
//     k, v and beta (a product of n generalized Householder transitions); the output after the
//     last.
// q, k and v come from one projection and a depthwise causal convolution (d_conv) with SiLU; q
// and k are L2-normalized per head and q scaled by 1/sqrt(d_k); each head's output goes through
// an RMSNorm shared by the heads, then the output projection. The recurrence is the SDK's
// (induct/nn/delta.hpp), chunked (chunks of kChunk steps); DeltaProduct's n steps per token as
// n steps of one sequence.
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/model.hpp>
#include <induct/nn/conv.hpp>
#include <induct/nn/delta.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/mlp.hpp>
#include <induct/nn/norms.hpp>
#include <induct/plugin.hpp>

#include "blocks/stack.hpp"

namespace {

struct Config {
  int64_t vocab = 0, layers = 6, d_model = 256, heads = 4, d_ff = 1024, d_conv = 4, householder = 1;
  bool negative_eigenvalues = false, gate = false;
  int64_t head_dim() const { return d_model / heads; }
  int64_t qkv_dim() const { return d_model * (1 + 2 * householder); }
};

using induct::blocks::project;

constexpr int64_t kChunk = 16;  // the delta rule's chunk (steps; n per token with householder n)

torch::nn::Linear linear(int64_t in, int64_t out) { return induct::blocks::linear(in, out, false); }

torch::Tensor l2_normalize(const torch::Tensor& x) {  // over the last dimension
  return x * torch::rsqrt(x.pow(2).sum(-1, true) + 1e-6);
}

class DeltaBlock : public torch::nn::Module {
 public:
  explicit DeltaBlock(const Config& c) : c_(c) {
    const int64_t C = c.qkv_dim(), H = c.heads;
    norm = register_module("norm", induct::nn::RMSNorm(c.d_model));
    qkv = register_module("qkv", linear(c.d_model, C));
    conv = register_module(
        "conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(C, C, c.d_conv).groups(C).bias(false)));
    beta = register_module("beta", linear(c.d_model, H * c.householder));
    if (c.gate) {
      decay = register_module("decay", linear(c.d_model, H));
      A_log = register_parameter("A_log", torch::empty({H}));
      dt_bias = register_parameter("dt_bias", torch::empty({H}));
      out_gate = register_module("out_gate", linear(c.d_model, c.d_model));
      torch::NoGradGuard no_grad;
      A_log.copy_(torch::log(torch::empty({H}).uniform_(1, 16)));
      auto dt = torch::exp(torch::rand({H}) * (std::log(0.1) - std::log(0.001)) + std::log(0.001))
                    .clamp_min(1e-4);
      dt_bias.copy_(dt + torch::log(-torch::expm1(-dt)));  // inverse softplus
    }
    out_norm = register_module("out_norm", induct::nn::RMSNorm(c.head_dim()));
    out = register_module("out", linear(c.d_model, c.d_model));
    mlp_norm = register_module("mlp_norm", induct::nn::RMSNorm(c.d_model));
    mlp = register_module("mlp", induct::nn::SwiGlu(c.d_model, c.d_ff));
  }

  torch::Tensor forward(const torch::Tensor& input) {  // [B, T, d_model]
    const int64_t B = input.size(0), T = input.size(1), H = c_.heads, D = c_.head_dim(),
                  n = c_.householder;
    const auto x = norm(input);
    auto qkv_t =
        induct::nn::causal_conv1d(project(qkv, x), conv->weight.squeeze(1), torch::Tensor(), true);
    auto parts = qkv_t.split({c_.d_model, n * c_.d_model, n * c_.d_model}, -1);
    const auto q = l2_normalize(parts[0].reshape({B, T, H, D})) / std::sqrt(double(D));
    const auto k = l2_normalize(parts[1].reshape({B, T, n, H, D}));
    const auto v = parts[2].reshape({B, T, n, H, D});
    auto b = torch::sigmoid(project(beta, x)).reshape({B, T, n, H});
    if (c_.negative_eigenvalues) b = 2 * b;
    torch::Tensor log_decay;  // [B, H, T]: the decay before a token's first step
    if (c_.gate)
      log_decay =
          (-torch::exp(A_log) * torch::softplus(project(decay, x) + dt_bias)).transpose(1, 2);
    // Token t's n steps are steps t n .. t n + n - 1 (per head); its output is read after the
    // last. The chunked form for every head width: with its products on batched_matmul it is
    // faster than the step-by-step loop on one core at heads of 16 too (docs/performance.md).
    const auto steps = [&](const torch::Tensor& t) {  // [B, T, n, H, D] -> [B, H, T n, D]
      return t.reshape({B, T * n, H, D}).transpose(1, 2);
    };
    const auto o_tokens =  // [B, T, H, D]
        induct::nn::delta_product(q.transpose(1, 2), steps(k), steps(v),
                                  b.reshape({B, T * n, H}).transpose(1, 2), log_decay, n,
                                  kChunk * n)
            .transpose(1, 2);
    auto o = out_norm(o_tokens);  // [B, T, H, D]
    o = o.reshape({B, T, c_.d_model});
    if (c_.gate) o = o * torch::silu(project(out_gate, x));
    const auto h = input + project(out, o);
    return h + mlp(mlp_norm(h));
  }

  induct::nn::RMSNorm norm{nullptr}, out_norm{nullptr}, mlp_norm{nullptr};
  torch::nn::Linear qkv{nullptr}, beta{nullptr}, decay{nullptr}, out_gate{nullptr}, out{nullptr};
  torch::nn::Conv1d conv{nullptr};
  induct::nn::SwiGlu mlp{nullptr};
  torch::Tensor A_log, dt_bias;

 private:
  Config c_;
};

class DeltaNet final : public induct::blocks::Stack {
 public:
  explicit DeltaNet(const Config& c) : Stack(c.vocab, c.d_model) {
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      blocks_.push_back(std::make_shared<DeltaBlock>(c));
      list->push_back(blocks_.back());
    }
    finish(c.vocab, c.d_model, induct::blocks::Head::kLinear);
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto x = embed(tokens);
    for (size_t i = 0; i < blocks_.size(); ++i)
      x = hooks("block." + std::to_string(i), blocks_[i]->forward(x));
    return head(x);
  }

 private:
  std::vector<std::shared_ptr<DeltaBlock>> blocks_;
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const long max = induct::kMaxModelDimension;
  Config c;
  c.vocab = ctx.vocab_size;
  c.layers = induct::get_in_range(o, "layers", c.layers, 1, max);
  c.d_model = induct::get_in_range(o, "d_model", c.d_model, 1, max);
  c.heads = induct::get_in_range(o, "heads", c.heads, 1, max);
  c.d_ff = induct::get_in_range(o, "d_ff", c.d_ff, 1, max);
  c.d_conv = induct::get_in_range(o, "d_conv", c.d_conv, 1, 64);
  c.householder = induct::get_in_range(o, "householder", c.householder, 1, 16);
  c.negative_eigenvalues = o.get<bool>("negative_eigenvalues", c.negative_eigenvalues);
  c.gate = o.get<bool>("gate", c.gate);
  if (c.d_model % c.heads != 0)
    o.fail("heads", "must divide d_model (" + std::to_string(c.d_model) + ")");
  return std::make_unique<DeltaNet>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("deltanet",
              "DeltaNet linear RNN; Gated DeltaNet with gate: true, DeltaProduct with "
              "householder: n, eigenvalues in (-1, 1) with negative_eigenvalues: true "
              "(layers=6, d_model=256, heads=4, d_ff=1024, d_conv=4, householder=1, "
              "negative_eigenvalues=false, gate=false)",
              make);
}

}  // namespace

INDUCT_PLUGIN("deltanet", "1.2.1", register_components)
