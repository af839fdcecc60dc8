// Mamba-2's residual block (Dao and Gu 2024): pre-RMSNorm, the SSD mixer; shared by the mamba2
// plugin and the hybrid plugin (plugins/models/mamba2/mamba2.cpp has the details).
#pragma once

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cmath>
#include <induct/hooks.hpp>
#include <induct/model.hpp>
#include <induct/nn/conv.hpp>
#include <induct/nn/elementwise.hpp>
#include <induct/nn/linear.hpp>
#include <induct/nn/norms.hpp>
#include <induct/nn/ssd.hpp>
#include <induct/options.hpp>

#include "blocks/project.hpp"

namespace induct::blocks {

struct Mamba2Config {
  int64_t vocab = 0, layers = 6, d_model = 256, expand = 2, headdim = 64, d_state = 128,
          ngroups = 1, d_conv = 4, chunk_size = 256;
  double dt_min = 1e-3, dt_max = 1e-1;
  bool tie_embeddings = true;
  int64_t d_inner() const { return expand * d_model; }
  int64_t heads() const { return d_inner() / headdim; }
  int64_t conv_dim() const { return d_inner() + 2 * ngroups * d_state; }
};

// The block's own options (expand, headdim, d_state, ngroups, d_conv, chunk_size, dt_min,
// dt_max) from `o`: the mamba2 model's options, or the `mamba2` section of a composed model's.
// The caller sets vocab, layers and the head, and d_model before (the checks use it).
inline void read_block_options(const induct::Options& o, Mamba2Config& c) {
  const long max = induct::kMaxModelDimension;
  c.expand = induct::get_in_range(o, "expand", c.expand, 1, max);
  c.headdim = induct::get_in_range(o, "headdim", c.headdim, 1, max);
  c.d_state = induct::get_in_range(o, "d_state", c.d_state, 1, max);
  c.ngroups = induct::get_in_range(o, "ngroups", c.ngroups, 1, max);
  c.d_conv = induct::get_in_range(o, "d_conv", c.d_conv, 1, max);
  c.chunk_size = induct::get_in_range(o, "chunk_size", c.chunk_size, 1, 4096);
  c.dt_min = o.get<double>("dt_min", c.dt_min);
  c.dt_max = o.get<double>("dt_max", c.dt_max);
  if (c.d_inner() % c.headdim != 0)
    o.fail("headdim", "must divide expand * d_model (" + std::to_string(c.d_inner()) + ")");
  if (c.heads() % c.ngroups != 0)
    o.fail("ngroups", "must divide the number of heads, expand * d_model / headdim (" +
                          std::to_string(c.heads()) + ")");
  if (!(c.dt_min > 0 && c.dt_min < c.dt_max)) o.fail("dt_min", "must satisfy 0 < dt_min < dt_max");
}

class Mamba2Block : public torch::nn::Module {
 public:
  explicit Mamba2Block(const Mamba2Config& c) : c_(c) {
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

  // With `hooks`, the causal convolution's output (x, B and C after its SiLU: all the scan
  // reads of the sequence besides the step sizes) passes through the hook point `<point>.conv`,
  // an inner point of the block's.
  torch::Tensor forward(const torch::Tensor& input, const induct::Hooks* hooks = nullptr,
                        const std::string& point = {}) {  // [B, T, d_model]
    const int64_t B = input.size(0), T = input.size(1), Di = c_.d_inner(), H = c_.heads(),
                  P = c_.headdim, G = c_.ngroups, N = c_.d_state;
    // The in-projection's three parts (z, x B C, dt) as three products of its weight's rows:
    // contiguous outputs, and no concatenation of their gradients in backward.
    const auto normed = norm(input);
    const auto& w = in_proj->weight;
    const auto z = induct::nn::linear(normed, w.narrow(0, 0, Di));
    const auto xbc_in = induct::nn::linear(normed, w.narrow(0, Di, c_.conv_dim()));
    const auto dt_in = induct::nn::linear(normed, w.narrow(0, Di + c_.conv_dim(), H));
    auto xbc = induct::nn::causal_conv1d(xbc_in, conv->weight.squeeze(1), conv->bias, true);
    if (hooks) xbc = (*hooks)(point + ".conv", xbc);
    auto xs = xbc.split({Di, G * N, G * N}, -1);
    auto x = xs[0].reshape({B, T, H, P});
    auto dt = torch::softplus(dt_in + dt_bias);  // [B, T, H]
    auto A = -torch::exp(A_log);                 // [H]
    auto y = induct::nn::ssd_scan(x * dt.unsqueeze(-1), dt * A, xs[1].reshape({B, T, G, N}),
                                  xs[2].reshape({B, T, G, N}), c_.chunk_size);
    y = (y + x * D.view({H, 1})).reshape({B, T, Di});
    return input + project(out_proj, gate_norm(induct::nn::swiglu(z, y)));  // y SiLU(z)
  }

  induct::nn::RMSNorm norm{nullptr}, gate_norm{nullptr};
  torch::nn::Linear in_proj{nullptr}, out_proj{nullptr};
  torch::nn::Conv1d conv{nullptr};
  torch::Tensor dt_bias, A_log, D;

 private:
  Mamba2Config c_;
};

}  // namespace induct::blocks
