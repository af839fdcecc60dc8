// Mamba-2 (Dao and Gu 2024): pre-RMSNorm residual blocks around the SSD mixer, final RMSNorm,
// head tied to the embedding, as the reference implementation's Mamba2 module and its
// language model. One input projection gives z, x, B, C and dt; a depthwise causal convolution
// with SiLU runs over (x, B, C); the scan has one scalar decay per head, exp(dt A); the output
// is RMSNorm(y * SiLU(z)) (the gated norm, normalising after the gate) and out_proj.
// Initialisation as the reference: A = uniform(1, 16) per head (stored as A_log), D = 1, the
// dt bias the inverse softplus of a log-uniform dt in [dt_min, dt_max] (floor 1e-4),
// embedding N(0, 0.02), out_proj scaled by 1/sqrt(layers). The scan is the SDK's ssd_scan.
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
#include <induct/nn/ssd.hpp>
#include <induct/plugin.hpp>

namespace {

struct Config {
  int64_t vocab = 0, layers = 6, d_model = 256, expand = 2, headdim = 64, d_state = 128,
          ngroups = 1, d_conv = 4, chunk_size = 256;
  double dt_min = 1e-3, dt_max = 1e-1;
  bool tie_embeddings = true;
  int64_t d_inner() const { return expand * d_model; }
  int64_t heads() const { return d_inner() / headdim; }
  int64_t conv_dim() const { return d_inner() + 2 * ngroups * d_state; }
};

torch::Tensor project(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return induct::nn::linear(x, layer->weight, layer->bias);
}

class Mamba2Block : public torch::nn::Module {
 public:
  explicit Mamba2Block(const Config& c) : c_(c) {
    const int64_t Di = c.d_inner(), H = c.heads(), C = c.conv_dim();
    norm = register_module("norm", induct::nn::RMSNorm(c.d_model));
    in_proj = register_module(
        "in_proj", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, Di + C + H).bias(false)));
    conv = register_module(
        "conv", torch::nn::Conv1d(torch::nn::Conv1dOptions(C, C, c.d_conv).groups(C).bias(true)));
    dt_bias = register_parameter("dt_bias", torch::empty({H}));
    A_log = register_parameter("A_log", torch::empty({H}));
    D = register_parameter("D", torch::ones({H}));
    gate_norm = register_module("gate_norm", induct::nn::RMSNorm(Di));
    out_proj = register_module(
        "out_proj", torch::nn::Linear(torch::nn::LinearOptions(Di, c.d_model).bias(false)));

    torch::NoGradGuard no_grad;
    auto dt = torch::exp(torch::rand({H}) * (std::log(c.dt_max) - std::log(c.dt_min)) +
                         std::log(c.dt_min))
                  .clamp_min(1e-4);
    dt_bias.copy_(dt + torch::log(-torch::expm1(-dt)));  // inverse softplus
    A_log.copy_(torch::log(torch::empty({H}).uniform_(1, 16)));
    out_proj->weight.div_(std::sqrt(static_cast<double>(c.layers)));
  }

  torch::Tensor forward(const torch::Tensor& input) {  // [B, T, d_model]
    const int64_t B = input.size(0), T = input.size(1), Di = c_.d_inner(), H = c_.heads(),
                  P = c_.headdim, G = c_.ngroups, N = c_.d_state;
    auto parts = project(in_proj, norm(input)).split({Di, c_.conv_dim(), H}, -1);
    auto xbc = induct::nn::causal_conv1d(parts[1], conv->weight.squeeze(1), conv->bias, true);
    auto xs = xbc.split({Di, G * N, G * N}, -1);
    auto x = xs[0].reshape({B, T, H, P});
    auto dt = torch::softplus(parts[2] + dt_bias);  // [B, T, H]
    auto A = -torch::exp(A_log);                    // [H]
    auto y = induct::nn::ssd_scan(x * dt.unsqueeze(-1), dt * A, xs[1].reshape({B, T, G, N}),
                                  xs[2].reshape({B, T, G, N}), c_.chunk_size);
    y = (y + x * D.view({H, 1})).reshape({B, T, Di});
    return input + project(out_proj, gate_norm(y * torch::silu(parts[0])));
  }

  induct::nn::RMSNorm norm{nullptr}, gate_norm{nullptr};
  torch::nn::Linear in_proj{nullptr}, out_proj{nullptr};
  torch::nn::Conv1d conv{nullptr};
  torch::Tensor dt_bias, A_log, D;

 private:
  Config c_;
};

class Mamba2 final : public induct::SequenceModel {
 public:
  explicit Mamba2(const Config& c) {
    embed_ = register_module("embed", torch::nn::Embedding(c.vocab, c.d_model));
    {
      torch::NoGradGuard no_grad;
      embed_->weight.normal_(0.0, 0.02);
    }
    auto list = register_module("blocks", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      blocks_.push_back(std::make_shared<Mamba2Block>(c));
      list->push_back(blocks_.back());
    }
    norm_ = register_module("norm", induct::nn::RMSNorm(c.d_model));
    if (!c.tie_embeddings)
      head_ = register_module(
          "head", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, c.vocab).bias(false)));
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
  std::vector<std::shared_ptr<Mamba2Block>> blocks_;
  induct::nn::RMSNorm norm_{nullptr};
  torch::nn::Linear head_{nullptr};
};

std::unique_ptr<induct::SequenceModel> make(const induct::ModelContext& ctx) {
  const auto& o = ctx.options;
  const long max = induct::kMaxModelDimension;
  Config c;
  c.vocab = ctx.vocab_size;
  c.layers = induct::get_in_range(o, "layers", c.layers, 1, max);
  c.d_model = induct::get_in_range(o, "d_model", c.d_model, 1, max);
  c.expand = induct::get_in_range(o, "expand", c.expand, 1, max);
  c.headdim = induct::get_in_range(o, "headdim", c.headdim, 1, max);
  c.d_state = induct::get_in_range(o, "d_state", c.d_state, 1, max);
  c.ngroups = induct::get_in_range(o, "ngroups", c.ngroups, 1, max);
  c.d_conv = induct::get_in_range(o, "d_conv", c.d_conv, 1, max);
  c.chunk_size = induct::get_in_range(o, "chunk_size", c.chunk_size, 1, 4096);
  c.dt_min = o.get<double>("dt_min", c.dt_min);
  c.dt_max = o.get<double>("dt_max", c.dt_max);
  c.tie_embeddings = o.get<bool>("tie_embeddings", c.tie_embeddings);
  if (c.d_inner() % c.headdim != 0)
    o.fail("headdim", "must divide expand * d_model (" + std::to_string(c.d_inner()) + ")");
  if (c.heads() % c.ngroups != 0)
    o.fail("ngroups", "must divide the number of heads, expand * d_model / headdim (" +
                          std::to_string(c.heads()) + ")");
  if (!(c.dt_min > 0 && c.dt_min < c.dt_max)) o.fail("dt_min", "must satisfy 0 < dt_min < dt_max");
  return std::make_unique<Mamba2>(c);
}

void register_components(induct::Registrar& r) {
  r.add_model("mamba2",
              "Mamba-2, SSD mixer (layers=6, d_model=256, expand=2, headdim=64, d_state=128, "
              "ngroups=1, d_conv=4, chunk_size=256, tie_embeddings=true)",
              make);
}

}  // namespace

INDUCT_PLUGIN("mamba2", "1.0.0", register_components)
