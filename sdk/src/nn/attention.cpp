#include "induct/nn/attention.hpp"

#include <cmath>
#include <stdexcept>

#include "induct/nn/elementwise.hpp"
#include "induct/nn/linear.hpp"

namespace induct::nn {

RotaryTables rotary_tables(int64_t rotary_dim, int64_t max_length, double theta) {
  if (rotary_dim <= 0 || rotary_dim % 2 != 0)
    throw std::invalid_argument("rotary dimension must be positive and even");
  auto i = torch::arange(0, rotary_dim, 2, torch::kDouble);
  auto inv_freq = torch::pow(theta, -i / static_cast<double>(rotary_dim));  // [rd/2]
  auto t = torch::arange(max_length, torch::kDouble);
  auto freqs = torch::outer(t, inv_freq);        // [T, rd/2]
  auto angles = torch::cat({freqs, freqs}, -1);  // [T, rd]
  return {angles.cos().to(torch::kFloat), angles.sin().to(torch::kFloat)};
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const AttentionOptions& options)
    : options_(options) {
  if (options.dim % options.heads != 0)
    throw std::invalid_argument("attention: dim must be divisible by heads");
  if (options.max_length < 1) throw std::invalid_argument("attention: max_length must be set");
  qkv = register_module(
      "qkv",
      torch::nn::Linear(torch::nn::LinearOptions(options.dim, 3 * options.dim).bias(options.bias)));
  out = register_module(
      "out",
      torch::nn::Linear(torch::nn::LinearOptions(options.dim, options.dim).bias(options.bias)));
  if (options.rotary_dim > 0) {
    RotaryTables tables = rotary_tables(options.rotary_dim, options.max_length, options.rope_theta);
    cos_ = register_buffer("rotary_cos", tables.cos);
    sin_ = register_buffer("rotary_sin", tables.sin);
  }
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t T = x.size(1);
  if (T > options_.max_length)
    throw std::invalid_argument("attention: sequence of " + std::to_string(T) +
                                " tokens, built for at most " +
                                std::to_string(options_.max_length));
  auto qkv_out = nn::linear(x, qkv->weight, qkv->bias);  // [B, T, 3 * C]
  auto y = causal_attention_qkv(qkv_out, options_.heads, options_.dropout, is_training(), cos_,
                                sin_);  // [B, T, C]
  y = nn::linear(y, out->weight, out->bias);
  if (options_.dropout > 0) y = nn::dropout(y, options_.dropout, is_training());
  return y;
}

}  // namespace induct::nn
