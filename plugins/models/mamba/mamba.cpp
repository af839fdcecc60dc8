// Mamba (Gu and Dao 2023) at the paper's size: pre-RMSNorm residual blocks around the
// selective-scan mixer, final RMSNorm, head tied to the embedding (Mamba's default).
// Initialisation as the reference implementation: A_log = log(1..N), D = 1, dt bias the inverse
// softplus of a log-uniform dt in [dt_min, dt_max], dt_proj weights uniform(+-dt_rank^-0.5),
// embedding N(0, 0.02), out_proj scaled by 1/sqrt(layers). The scan is the SDK's.
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/model.hpp>
#include <induct/nn/conv.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/norms.hpp>
#include <induct/nn/scan.hpp>
#include <induct/plugin.hpp>

namespace {

struct Config {
  int64_t vocab = 0, layers = 6, d_model = 256, expand = 2, d_state = 64, d_conv = 4, dt_rank = 16;
  double dt_min = 1e-3, dt_max = 1e-1;
  bool tie_embeddings = true;
  int64_t d_inner() const { return expand * d_model; }
};

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// The layer's parameters through the SDK's linear (oneDNN's sgemm on the CPU).
torch::Tensor project(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return induct::nn::linear(x, layer->weight, layer->bias);
}

class MambaBlock : public torch::nn::Module {
 public:
  explicit MambaBlock(const Config& c) : c_(c) {
    const int64_t Di = c.d_inner(), N = c.d_state, R = c.dt_rank;
    norm = register_module("norm", induct::nn::RMSNorm(c.d_model));
    in_proj = register_module("in_proj", linear(c.d_model, 2 * Di, false));
    conv = register_module("conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(Di, Di, c.d_conv)
                                                         .groups(Di)
                                                         .padding(c.d_conv - 1)
                                                         .bias(true)));
    x_proj = register_module("x_proj", linear(Di, R + 2 * N, false));
    dt_proj = register_module("dt_proj", linear(R, Di, true));
    out_proj = register_module("out_proj", linear(Di, c.d_model, false));
    A_log = register_parameter(
        "A_log", torch::log(torch::arange(1, N + 1, torch::kFloat)).repeat({Di, 1}));  // [Di, N]
    D = register_parameter("D", torch::ones({Di}));

    torch::NoGradGuard no_grad;
    const double std = 1.0 / std::sqrt(static_cast<double>(R));
    dt_proj->weight.uniform_(-std, std);
    auto dt = torch::exp(torch::rand({Di}) * (std::log(c.dt_max) - std::log(c.dt_min)) +
                         std::log(c.dt_min))
                  .clamp_min(1e-4);
    dt_proj->bias.copy_(dt + torch::log(-torch::expm1(-dt)));  // inverse softplus
    out_proj->weight.div_(std::sqrt(static_cast<double>(c.layers)));
  }

  torch::Tensor forward(const torch::Tensor& x) {  // [B, T, d_model]
    const int64_t N = c_.d_state;
    auto xz = project(in_proj, norm(x)).chunk(2, -1);  // 2 x [B, T, Di]
    auto u =
        induct::nn::causal_conv1d(xz[0], conv->weight.squeeze(1), conv->bias, true);  // [B, T, Di]
    auto dbc = project(x_proj, u).split({c_.dt_rank, N, N}, -1);   // [B, T, R|N|N]
    auto delta = induct::nn::linear(dbc[0], dt_proj->weight, {});  // [B, T, Di]
    auto A = -torch::exp(A_log);                                   // [Di, N]
    // y * silu(z) of the scan with step sizes softplus(delta + dt bias).
    auto y = induct::nn::selective_scan(u, delta, A, dbc[1], dbc[2], D,
                                        {dt_proj->bias, true, xz[1]});  // [B, T, Di]
    return x + project(out_proj, y);
  }

  induct::nn::RMSNorm norm{nullptr};
  torch::nn::Linear in_proj{nullptr}, x_proj{nullptr}, dt_proj{nullptr}, out_proj{nullptr};
  torch::nn::Conv1d conv{nullptr};
  torch::Tensor A_log, D;

 private:
  Config c_;
};

class Mamba final : public induct::SequenceModel {
 public:
  explicit Mamba(const Config& c) {
    embed_ = register_module("embed", torch::nn::Embedding(c.vocab, c.d_model));
    {
      torch::NoGradGuard no_grad;
      embed_->weight.normal_(0.0, 0.02);
    }
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      blocks_.push_back(std::make_shared<MambaBlock>(c));
      list->push_back(blocks_.back());
    }
    norm_ = register_module("norm", induct::nn::RMSNorm(c.d_model));
    if (!c.tie_embeddings) head_ = register_module("head", linear(c.d_model, c.vocab, false));
  }

  torch::Tensor forward(const torch::Tensor& tokens) override {  // [B, T] -> [B, T, V]
    auto x = hooks("embed", embed_(tokens));
    for (size_t i = 0; i < blocks_.size(); ++i)
      x = hooks("block." + std::to_string(i), blocks_[i]->forward(x));
    x = hooks("norm", norm_(x));
    return head_ ? project(head_, x) : induct::nn::linear(x, embed_->weight);
  }

 private:
  torch::nn::Embedding embed_{nullptr};
  std::vector<std::shared_ptr<MambaBlock>> blocks_;
  induct::nn::RMSNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  Config c;
  c.vocab = ctx.vocab_size;
  c.layers = induct::get_in_range(o, "layers", c.layers, 1, induct::kMaxModelDimension);
  c.d_model = induct::get_in_range(o, "d_model", c.d_model, 1, induct::kMaxModelDimension);
  c.expand = induct::get_in_range(o, "expand", c.expand, 1, induct::kMaxModelDimension);
  c.d_state = induct::get_in_range(o, "d_state", c.d_state, 1, induct::kMaxModelDimension);
  c.d_conv = induct::get_in_range(o, "d_conv", c.d_conv, 1, induct::kMaxModelDimension);
  c.dt_rank = induct::get_in_range(o, "dt_rank", c.dt_rank, 1, induct::kMaxModelDimension);
  c.dt_min = o.get<double>("dt_min", c.dt_min);
  c.dt_max = o.get<double>("dt_max", c.dt_max);
  c.tie_embeddings = o.get<bool>("tie_embeddings", c.tie_embeddings);
  if (!(c.dt_min > 0 && c.dt_min < c.dt_max)) o.fail("dt_min", "must satisfy 0 < dt_min < dt_max");
  return std::make_unique<Mamba>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("mamba",
              "Mamba (layers=6, d_model=256, expand=2, d_state=64, d_conv=4, dt_rank=16, "
              "tie_embeddings=true)",
              make);
}

}  // namespace

INDUCT_PLUGIN("mamba", "1.2.0", register_components)
