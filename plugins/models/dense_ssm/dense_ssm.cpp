// Dense-SSM, the bilinear RNN of SPEC.md section 8:
//   h_t = A(x_t) h_{t-1},  A(x)_{ij} = sum_k W_{ijk} x_k   (no additive term)
// with x_t the embedding of token t, a learned non-zero h_0, L2 normalisation of h_t after each
// step (project decision, switchable) and a linear head on every h_t. Optionally low rank (CP):
//   A(x) = U diag(V^T x) W^T.
// Inputs come from a small vocabulary, so the full model builds one H x H matrix per token
// once per forward (A_v = W e_v) and gathers them; it never contracts W per step.
#include <induct/model.hpp>
#include <induct/nn/linear.hpp>
#include <induct/plugin.hpp>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>

namespace {

// Up to this vocabulary size the full model multiplies by all per-token matrices at once.
constexpr int64_t kSideBySideVocab = 32;

struct Config {
  int64_t vocab = 0, hidden = 256, embed = 256, rank = 0;
  bool normalize = true;
};

class DenseSsm final : public induct::SequenceModel {
 public:
  explicit DenseSsm(const Config& c) : c_(c) {
    embed_ = register_module("embed", torch::nn::Embedding(c.vocab, c.embed));
    torch::NoGradGuard no_grad;
    const auto H = c.hidden, E = c.embed;
    if (c.rank == 0) {
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
    const bool side_by_side = c_.rank == 0 && V <= kSideBySideVocab;
    torch::Tensor per_token;
    if (side_by_side)  // [H(j), V*H(i)]: entry (j, v*H + i) = A_v[i, j]
      per_token = torch::matmul(W_.permute({1, 0, 2}).reshape({H * H, c_.embed}), e.t())
                      .reshape({H, H, V})
                      .permute({0, 2, 1})
                      .reshape({H, V * H});
    else if (c_.rank == 0)  // A_v: [V, H, H]
      per_token = torch::matmul(W_.reshape({H * H, c_.embed}), e.t()).t().reshape({V, H, H});
    else  // V^T e_v: [V, R]
      per_token = torch::matmul(e, V_);
    // The per-step product as the SDK's linear, whose weight is [out, in]: [V*H, H].
    if (side_by_side) per_token = per_token.t().contiguous();
    auto h = h0_.expand({B, H});  // [B, H]
    std::vector<torch::Tensor> states;
    for (const auto& token : tokens.unbind(1)) {  // token: [B]
      if (side_by_side) {
        auto all = induct::nn::linear(h, per_token).view({B, V, H});             // [B, V, H]
        h = all.gather(1, token.view({B, 1, 1}).expand({B, 1, H})).squeeze(1);  // [B, H]
      } else if (c_.rank == 0) {
        auto A = per_token.index_select(0, token);              // [B, H, H]
        h = torch::bmm(A, h.unsqueeze(-1)).squeeze(-1);          // [B, H]
      } else {
        auto scale = per_token.index_select(0, token);           // [B, R]
        h = torch::matmul(torch::matmul(h, W_) * scale, U_.t());  // [B, H]
      }
      if (c_.normalize) h = h / h.norm(2, -1, /*keepdim=*/true).clamp_min(1e-12);
      states.push_back(h);
    }
    return induct::nn::linear(torch::stack(states, 1), head_->weight, head_->bias);  // [B, T, V]
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
  c.hidden = o.get<long>("hidden", c.hidden);
  c.embed = o.get<long>("embed", c.hidden);
  c.rank = o.get<long>("rank", 0);
  c.normalize = o.get<bool>("normalize", true);
  if (c.hidden < 1) o.fail("hidden", "must be at least 1");
  if (c.embed < 1) o.fail("embed", "must be at least 1");
  if (c.rank < 0) o.fail("rank", "must be 0 (full 3-tensor) or a positive rank");
  return std::make_unique<DenseSsm>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("dense_ssm",
              "bilinear RNN h_t = A(x_t) h_{t-1} (hidden=256, embed=hidden, rank=0 (full), normalize=true)",
              make);
}

}  // namespace

// 1.1.0: the head and the per-step product on the SDK's linear (oneDNN's sgemm; results differ
// by float rounding, so stored 1.0.0 trials are not reused).
INDUCT_PLUGIN("dense_ssm", "1.1.0", register_components)
