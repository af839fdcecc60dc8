// Mamba's residual block (Gu and Dao 2023): pre-RMSNorm, the selective-scan mixer; shared by
// the mamba plugin and the hybrid plugin (plugins/models/mamba/mamba.cpp has the details).
#pragma once

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/hooks.hpp>
#include <induct/model.hpp>
#include <induct/nn/conv.hpp>
#include <induct/nn/norms.hpp>
#include <induct/nn/scan.hpp>
#include <induct/options.hpp>

#include "blocks/project.hpp"

namespace induct::blocks {

struct MambaConfig {
  int64_t vocab = 0, layers = 6, d_model = 256, expand = 2, d_state = 64, d_conv = 4, dt_rank = 16;
  double dt_min = 1e-3, dt_max = 1e-1;
  bool tie_embeddings = true;
  int64_t d_inner() const { return expand * d_model; }
};

// The block's own options (expand, d_state, d_conv, dt_rank, dt_min, dt_max) from `o`: the
// mamba model's options, or the `mamba` section of a composed model's. The caller sets vocab,
// layers, d_model and the head.
inline void read_block_options(const induct::Options& o, MambaConfig& c) {
  const long max = induct::kMaxModelDimension;
  c.expand = induct::get_in_range(o, "expand", c.expand, 1, max);
  c.d_state = induct::get_in_range(o, "d_state", c.d_state, 1, max);
  c.d_conv = induct::get_in_range(o, "d_conv", c.d_conv, 1, max);
  c.dt_rank = induct::get_in_range(o, "dt_rank", c.dt_rank, 1, max);
  c.dt_min = o.get<double>("dt_min", c.dt_min);
  c.dt_max = o.get<double>("dt_max", c.dt_max);
  if (!(c.dt_min > 0 && c.dt_min < c.dt_max)) o.fail("dt_min", "must satisfy 0 < dt_min < dt_max");
}

class MambaBlock : public torch::nn::Module {
 public:
  explicit MambaBlock(const MambaConfig& c) : c_(c) {
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

  // With `hooks`, the causal convolution's output (after its SiLU: all the scan reads of the
  // sequence) passes through the hook point `<point>.conv`, an inner point of the block's.
  torch::Tensor forward(const torch::Tensor& x, const induct::Hooks* hooks = nullptr,
                        const std::string& point = {}) {  // [B, T, d_model]
    const int64_t N = c_.d_state;
    auto xz = project(in_proj, norm(x)).chunk(2, -1);  // 2 x [B, T, Di]
    auto u =
        induct::nn::causal_conv1d(xz[0], conv->weight.squeeze(1), conv->bias, true);  // [B, T, Di]
    if (hooks) u = (*hooks)(point + ".conv", u);
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
  MambaConfig c_;
};

}  // namespace induct::blocks
