// The state space dual (SSD) layer of Mamba-2 (Dao and Gu 2024): a selective scan whose decay
// is one scalar per head and step.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// Per head h (state [P, N], zero at the start):
//   S_t = exp(a_t) S_{t-1} + x_t B_t^T,   y_t = S_t C_t
//   x: [B, T, H, P]   a: [B, T, H] (log decays, <= 0 for a stable scan)
//   Bm, C: [B, T, G, N], G dividing H (head h reads group h / (H / G))   ->  y: [B, T, H, P]
// Mamba-2 calls it with x * dt, a = A dt, and adds D x itself.
// The chunked algorithm of the SSD paper (its "minimal" listing) in LibTorch operations,
// differentiated by autograd, on any device: within each chunk of `chunk` steps the quadratic
// (attention-like) form with the decay mask exp(a_{j+1} + ... + a_i) built from masked
// cumulative sums (no differences of long sums, so float32 stays exact to rounding); across
// chunks a recurrence over the chunks' final states. Cost per chunk of Q steps is
// O(Q^2 (N + P) + Q N P) per head; T is padded up to a multiple of Q inside.
torch::Tensor INDUCT_SDK_API ssd_scan(const torch::Tensor& x, const torch::Tensor& a,
                                      const torch::Tensor& Bm, const torch::Tensor& C,
                                      int64_t chunk);

// The same recurrence step by step (a loop of LibTorch operations, autograd's backward).
torch::Tensor INDUCT_SDK_API ssd_scan_reference(const torch::Tensor& x, const torch::Tensor& a,
                                                const torch::Tensor& Bm, const torch::Tensor& C);

}  // namespace induct::nn
