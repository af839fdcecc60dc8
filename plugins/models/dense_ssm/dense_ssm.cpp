// Dense-SSM, the bilinear RNN of docs/method.md section 8:
//   h_t = A(x_t) h_{t-1},  A(x)_{ij} = sum_k W_{ijk} x_k   (no additive term)
// with x_t the embedding of token t, a learned non-zero h_0, L2 normalisation of h_t after each
// step (project decision, switchable) and a linear head on every h_t. Optionally low rank (CP):
//   A(x) = U diag(V^T x) W^T,
// or block-diagonal (`block: b`, b dividing H; b = 1 is the diagonal form): H / b independent
// b x b bilinear maps, A(x) = blockdiag(A_1(x), ..., A_{H/b}(x)), A_j(x)_{pq} = sum_k
// W_{jpqk} x_k (the structured forms of Ebrahimi and Memisevic 2025).
// Inputs come from a small vocabulary, so the full model builds one H x H matrix per token
// once per forward (A_v = W e_v) and gathers them; it never contracts W per step.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <induct/model.hpp>
#include <induct/nn/linear.hpp>
#include <induct/plugin.hpp>

namespace {

// Up to this vocabulary size the full model multiplies by all per-token matrices at once.
constexpr int64_t kSideBySideVocab = 32;

struct Config {
  int64_t vocab = 0, hidden = 256, embed = 256, rank = 0, block = 0;  // block 0: full
  bool normalize = true;
};

// The smallest norm a state is divided by.
constexpr double kMinNorm = 1e-12;

// One step's selection on the CPU in float32: all [B, V*H] (the state times every token's
// matrix side by side), token [B] -> h [B, H]: row b is block token[b] of all's row b, divided
// by its L2 norm (at least kMinNorm) when normalize. One autograd node instead of gather,
// squeeze, norm, clamp and division and their backward nodes; the gradient is zero outside the
// selected blocks.
class SelectNormalize : public torch::autograd::Function<SelectNormalize> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& all,
                                                const torch::Tensor& token, int64_t H,
                                                bool normalize) {
    const int64_t B = all.size(0), VH = all.size(1);
    auto h = torch::empty({B, H}, all.options());
    auto scale = torch::empty({B}, all.options());  // 1 / max(norm, kMinNorm), or 1
    const float* a = all.data_ptr<float>();
    const int64_t* tok = token.data_ptr<int64_t>();
    float* out = h.data_ptr<float>();
    float* s = scale.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b) {
      TORCH_CHECK(tok[b] >= 0 && (tok[b] + 1) * H <= VH, "dense_ssm: token ", tok[b],
                  " out of range");
      const float* row = a + b * VH + tok[b] * H;
      float sq = 0;
      for (int64_t i = 0; i < H; ++i) sq += row[i] * row[i];
      s[b] = normalize
                 ? static_cast<float>(1.0 / std::max(std::sqrt(static_cast<double>(sq)), kMinNorm))
                 : 1.0f;
      for (int64_t i = 0; i < H; ++i) out[b * H + i] = row[i] * s[b];
    }
    ctx->save_for_backward({token, h});  // h is the output: saved without a reference cycle
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["VH"] = VH;
    ctx->saved_data["normalize"] = normalize;
    return {h};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& token = saved[0];
    const auto& h = saved[1];
    const auto scale = ctx->saved_data["scale"].toTensor();
    const int64_t VH = ctx->saved_data["VH"].toInt();
    const bool normalize = ctx->saved_data["normalize"].toBool();
    const int64_t B = h.size(0), H = h.size(1);
    const auto dh = grads[0].contiguous();
    auto dall = torch::zeros({B, VH}, h.options());
    const int64_t* tok = token.data_ptr<int64_t>();
    const float* hv = h.data_ptr<float>();
    const float* g = dh.data_ptr<float>();
    const float* s = scale.data_ptr<float>();
    float* d = dall.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b) {
      const float* hb = hv + b * H;
      const float* gb = g + b * H;
      float* db = d + b * VH + tok[b] * H;
      // y = x s with s = 1 / |x|: dx = s (dy - y (y . dy)); where the norm was clamped (or
      // without normalisation) s is a constant: dx = s dy.
      float dot = 0;
      const bool clamped = !normalize || s[b] >= static_cast<float>(1.0 / kMinNorm);
      if (!clamped)
        for (int64_t i = 0; i < H; ++i) dot += hb[i] * gb[i];
      for (int64_t i = 0; i < H; ++i) db[i] = s[b] * (gb[i] - hb[i] * dot);
    }
    return {dall, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

class DenseSsm final : public induct::SequenceModel {
 public:
  explicit DenseSsm(const Config& c) : c_(c) {
    embed_ = register_module("embed", torch::nn::Embedding(c.vocab, c.embed));
    torch::NoGradGuard no_grad;
    const auto H = c.hidden, E = c.embed;
    if (c.block > 0) {
      // Each b x b block's entries ~ N(0, 1/b): spectral radius about 1, as the full form's.
      const auto b = c.block;
      W_ = register_parameter(
          "W", torch::randn({H / b, b, b, E}) / std::sqrt(static_cast<double>(b * E)));
    } else if (c.rank == 0) {
      // A_v entries ~ N(0, 1/H) for unit-variance embeddings: spectral radius about 1.
      W_ = register_parameter("W", torch::randn({H, H, E}) / std::sqrt(static_cast<double>(H * E)));
    } else {
      const auto R = c.rank;
      U_ = register_parameter("U", torch::randn({H, R}) / std::sqrt(static_cast<double>(R)));
      V_ = register_parameter("V", torch::randn({E, R}) / std::sqrt(static_cast<double>(E)));
      W_ = register_parameter("W", torch::randn({H, R}) / std::sqrt(static_cast<double>(H)));
    }
    h0_ = register_parameter("h0", torch::randn({H}) / std::sqrt(static_cast<double>(H)));
    head_ = register_module("head", torch::nn::Linear(H, c.vocab));
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    const int64_t B = tokens.size(0), H = c_.hidden, V = c_.vocab;
    const torch::Tensor& e = embed_->weight;  // [V, E]
    // Small vocabularies: one GEMM per step against every token's matrix side by side,
    // [B, H] x [H, V*H], then pick each row's token (no [B, H, H] gather per step).
    const bool side_by_side = c_.rank == 0 && c_.block == 0 && V <= kSideBySideVocab;
    const bool fused =
        side_by_side && tokens.device().is_cpu() && W_.scalar_type() == torch::kFloat;
    torch::Tensor per_token;
    const int64_t b = c_.block, nb = b > 0 ? H / b : 0;
    if (b > 0)  // each token's blocks: [V, H/b, b, b]
      per_token =
          torch::matmul(W_.reshape({nb * b * b, c_.embed}), e.t()).t().reshape({V, nb, b, b});
    else if (side_by_side)  // [V*H, H], row v*H + i = row i of A_v: the SDK's linear's [out, in]
                            // weight
      per_token = induct::nn::linear(e, W_.view({H * H, c_.embed})).view({V * H, H});
    else if (c_.rank == 0)  // A_v: [V, H, H]
      per_token = torch::matmul(W_.reshape({H * H, c_.embed}), e.t()).t().reshape({V, H, H});
    else  // V^T e_v: [V, R]
      per_token = torch::matmul(e, V_);
    // One step: h_t [B, H] from h_{t-1} and the tokens x_t [B].
    const auto advance = [&](const torch::Tensor& token, torch::Tensor h) {
      if (fused) {
        auto all = induct::nn::linear(h, per_token);  // [B, V*H]
        return SelectNormalize::apply(all, token.contiguous(), H, c_.normalize)[0];
      }
      if (b > 0) {
        auto A = per_token.index_select(0, token);                       // [B, nb, b, b]
        h = torch::matmul(A, h.reshape({B, nb, b, 1})).reshape({B, H});  // [B, H]
      } else if (side_by_side) {
        auto all = induct::nn::linear(h, per_token).view({B, V, H});            // [B, V, H]
        h = all.gather(1, token.view({B, 1, 1}).expand({B, 1, H})).squeeze(1);  // [B, H]
      } else if (c_.rank == 0) {
        auto A = per_token.index_select(0, token);       // [B, H, H]
        h = torch::bmm(A, h.unsqueeze(-1)).squeeze(-1);  // [B, H]
      } else {
        auto scale = per_token.index_select(0, token);            // [B, R]
        h = torch::matmul(torch::matmul(h, W_) * scale, U_.t());  // [B, H]
      }
      if (c_.normalize) h = h / h.norm(2, -1, /*keepdim=*/true).clamp_min(kMinNorm);
      return h;
    };
    const torch::Tensor h0 = h0_.expand({B, H});  // [B, H]
    torch::Tensor all_states;                     // [B, T, H]
    if (hooks.active()) {  // a study reads or edits the state: an edit at t is what t + 1 reads
      all_states = induct::hooked_recurrence(
          hooks, "state", tokens.size(1), h0,
          [&](int64_t t, const torch::Tensor& h) { return advance(tokens.select(1, t), h); });
    } else {
      torch::Tensor h = h0;
      std::vector<torch::Tensor> states;
      for (const auto& token : tokens.unbind(1)) states.push_back(h = advance(token, h));
      all_states = hooks("state", torch::stack(states, 1));
    }
    return induct::nn::linear(all_states, head_->weight, head_->bias);  // [B, T, V]
  }

 private:
  Config c_;
  torch::nn::Embedding embed_{nullptr};
  torch::Tensor W_, U_, V_, h0_;
  torch::nn::Linear head_{nullptr};
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  Config c;
  c.vocab = ctx.vocab_size;
  c.hidden = induct::get_in_range(o, "hidden", c.hidden, 1, induct::kMaxModelDimension);
  c.embed = induct::get_in_range(o, "embed", c.hidden, 1, induct::kMaxModelDimension);
  c.rank = induct::get_in_range(o, "rank", 0, 0, induct::kMaxModelDimension);
  c.block = induct::get_in_range(o, "block", 0, 0, induct::kMaxModelDimension);
  c.normalize = o.get<bool>("normalize", true);
  if (c.block > 0 && c.hidden % c.block != 0)
    o.fail("block", "must divide hidden (" + std::to_string(c.hidden) + ")");
  if (c.block > 0 && c.rank > 0) o.fail("block", "and rank are two forms: set one of them");
  return std::make_unique<DenseSsm>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("dense_ssm",
              "bilinear RNN h_t = A(x_t) h_{t-1} (hidden=256, embed=hidden, rank=0 (full), block=0 "
              "(full; b: block-diagonal, 1: diagonal), normalize=true)",
              make);
}

}  // namespace

INDUCT_PLUGIN("dense_ssm", "1.3.0", register_components)
