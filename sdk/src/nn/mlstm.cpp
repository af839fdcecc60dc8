#include "induct/nn/mlstm.hpp"

#include <torch/torch.h>

#include <cmath>

#include "induct/nn/matmul.hpp"

namespace induct::nn {

torch::Tensor mlstm_parallel(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& igate, const torch::Tensor& fgate) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes() && v.dim() == 4 &&
                  v.sizes().slice(0, 3) == q.sizes().slice(0, 3),
              "mlstm_parallel: q, k must be [B, H, T, D] and v [B, H, T, D_v]");
  const auto gates = q.sizes().slice(0, 3).vec();
  TORCH_CHECK(igate.dim() == 4 && fgate.dim() == 4 && igate.size(3) == 1 &&
                  igate.sizes().slice(0, 3) == gates && fgate.sizes() == igate.sizes(),
              "mlstm_parallel: igate and fgate must be [B, H, T, 1]");
  const int64_t T = q.size(2), D = q.size(3);
  // log_d[i][j] = sum of log f over j+1..i + i~_j = F_i - F_j + i~_j (F the cumulative sum of
  // log f) for j <= i, -inf above the diagonal: one broadcast sum of [T, 1] and [1, T].
  const auto F = torch::log_sigmoid(fgate).cumsum(-2);  // [B, H, T, 1]
  const auto above = torch::ones({T, T}, q.options().dtype(torch::kBool)).triu(1);
  const auto log_d = (F + (igate - F).transpose(-2, -1)).masked_fill(above, -INFINITY);
  const auto max_log_d = std::get<0>(log_d.max(-1, true));  // [B, H, T, 1]
  // c = (q k^T / sqrt(D)) exp(log_d - max): the 1/sqrt(D) inside the exponent.
  const auto c = batched_matmul(q, k.transpose(-2, -1)) *
                 torch::exp(log_d - (max_log_d + 0.5 * std::log(static_cast<double>(D))));
  const auto normalizer = torch::maximum(c.sum(-1, true).abs(), torch::exp(-max_log_d));
  return batched_matmul(c / (normalizer + 1e-6), v);
}

}  // namespace induct::nn
