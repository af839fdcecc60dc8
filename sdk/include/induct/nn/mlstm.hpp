// The mLSTM cell of xLSTM (Beck et al. 2024): matrix memory with exponential input gates and
// sigmoid forget gates, in its parallel, stabilized form.
#pragma once

#include <torch/types.h>

#include "induct/export.hpp"

namespace induct::nn {

// NX-AI/xlstm's parallel_stabilized_simple (row-wise stabilizer, eps 1e-6): per head,
//   log_d[i][j] = sum_{l = j+1..i} log sigmoid(f~_l) + i~_j  (j <= i; -inf above),
//   m_i = max_j log_d[i][j],   c[i][j] = (q_i . k_j / sqrt(D)) exp(log_d[i][j] - m_i),
//   h_i = sum_j c[i][j] v_j / (max(|sum_j c[i][j]|, exp(-m_i)) + 1e-6)
//   q, k, v: [B, H, T, D]   igate, fgate (pre-activations): [B, H, T, 1]   ->  [B, H, T, D]
// The 1/sqrt(D) inside the exponent; the products on batched_matmul; differentiated by autograd.
torch::Tensor INDUCT_SDK_API mlstm_parallel(const torch::Tensor& q, const torch::Tensor& k,
                                            const torch::Tensor& v, const torch::Tensor& igate,
                                            const torch::Tensor& fgate);

}  // namespace induct::nn
