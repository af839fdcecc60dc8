// The delta rule (Schlag et al. 2021; Yang et al. 2024), the state update of DeltaNet and its
// variants, with an optional per-step decay (Gated DeltaNet).
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// Per head (state S [D_k, D_v], zero at the start):
//   S <- exp(g_t) S                                     (when log_decay is defined)
//   S_t = S + k_t (beta_t (v_t - S^T k_t))^T,   o_t = S_t^T q_t
//   q, k: [B, H, T, D_k]   v: [B, H, T, D_v]   beta: [B, H, T]   log_decay: [B, H, T] (g_t <= 0)
//   or undefined   ->  o: [B, H, T, D_v]
// beta in (0, 2) gives the transition I - beta k k^T (unit k) eigenvalues in (-1, 1).
// The chunked (WY) form of flash-linear-attention's chunk_delta_rule in LibTorch operations,
// differentiated by autograd, on any device: within a chunk of Q steps the new values
// U = (I + diag(beta) A)^{-1} diag(beta) (V - diag(G) K S_0), A the strictly lower products
// k_t . k_s decayed by G_t / G_s (G the decays' running product in the chunk), come from one
// unit-triangular inverse, computed as a recursive block inverse (level by level, batched
// products: stable in float32 with beta near 2 and correlated keys, where the series
// (I - N)(I + N^2)... of SDK numerics 0.1.4 and earlier lost every digit; LibTorch's batched
// triangular solve is far slower on the CPU at these sizes); the outputs Q S_0 G + (Q K^T
// decayed, causal) U and the next state are products (batched_matmul: one sgemm per batch item
// on the CPU); only the chunks run in sequence. A chunk of T or more steps is one pass.
torch::Tensor INDUCT_SDK_API delta_rule(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v, const torch::Tensor& beta,
                                        const torch::Tensor& log_decay, int64_t chunk);

// DeltaProduct (Siems et al. 2025): n delta steps per token, each with its own key, value and
// beta (a product of n generalized Householder transitions), the decay before a token's first
// step, the output read after its last: per head
//   S <- exp(g_t) S;  for j in 1..n: S <- S + k_tj (beta_tj (v_tj - S^T k_tj))^T;  o_t = S^T q_t
//   q: [B, H, T, D_k]   k: [B, H, T n, D_k]   v: [B, H, T n, D_v]   beta: [B, H, T n] (token t's
//   steps are t n .. t n + n - 1, as flash-linear-attention's gated_delta_product)
//   log_decay: [B, H, T] or undefined   ->  o: [B, H, T, D_v]
// delta_rule over the T n steps (chunks of `chunk` steps), q repeated at every step of a token.
torch::Tensor INDUCT_SDK_API delta_product(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& beta,
                                           const torch::Tensor& log_decay, int64_t householder,
                                           int64_t chunk);

// The same recurrence step by step (a loop of LibTorch operations, autograd's backward).
torch::Tensor INDUCT_SDK_API delta_rule_reference(const torch::Tensor& q, const torch::Tensor& k,
                                                  const torch::Tensor& v, const torch::Tensor& beta,
                                                  const torch::Tensor& log_decay);

}  // namespace induct::nn
