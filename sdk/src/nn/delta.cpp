#include "induct/nn/delta.hpp"

#include <torch/torch.h>

#include "induct/nn/matmul.hpp"

namespace induct::nn {

namespace {

void check(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
           const torch::Tensor& beta, const torch::Tensor& log_decay) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes(), "delta_rule: q and k must be [B, H, T, D_k]");
  TORCH_CHECK(
      v.dim() == 4 && v.size(0) == q.size(0) && v.size(1) == q.size(1) && v.size(2) == q.size(2),
      "delta_rule: v must be [B, H, T, D_v]");
  TORCH_CHECK(beta.sizes() == q.sizes().slice(0, 3), "delta_rule: beta must be [B, H, T]");
  TORCH_CHECK(!log_decay.defined() || log_decay.sizes() == beta.sizes(),
              "delta_rule: log_decay must be [B, H, T] or undefined");
}

// (I + N)^{-1} for strictly lower triangular N [..., Q, Q] (nilpotent: N^Q = 0), as
// (I - N)(I + N^2)(I + N^4)... up to the power that reaches Q: batched products only (LibTorch's
// batched triangular solve on the CPU is two orders of magnitude slower at these sizes).
torch::Tensor unit_lower_inverse(const torch::Tensor& n) {
  const int64_t Q = n.size(-1);
  auto inverse = torch::eye(Q, n.options()) - n;
  auto power = n;
  for (int64_t reach = 2; reach < Q; reach *= 2) {
    power = batched_matmul(power, power);  // N^reach
    inverse = inverse + batched_matmul(inverse, power);
  }
  return inverse;
}

}  // namespace

torch::Tensor delta_rule_reference(const torch::Tensor& q, const torch::Tensor& k,
                                   const torch::Tensor& v, const torch::Tensor& beta,
                                   const torch::Tensor& log_decay) {
  check(q, k, v, beta, log_decay);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), Dk = q.size(3), Dv = v.size(3);
  auto S = torch::zeros({B, H, Dk, Dv}, v.options());
  std::vector<torch::Tensor> out;
  out.reserve(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    if (log_decay.defined()) S = S * torch::exp(log_decay.select(2, t)).unsqueeze(-1).unsqueeze(-1);
    const auto kt = k.select(2, t), vt = v.select(2, t);               // [B, H, D]
    const auto read = torch::matmul(kt.unsqueeze(-2), S).squeeze(-2);  // S^T k
    S = S + kt.unsqueeze(-1) * (beta.select(2, t).unsqueeze(-1) * (vt - read)).unsqueeze(-2);
    out.push_back(torch::matmul(q.select(2, t).unsqueeze(-2), S).squeeze(-2));  // S^T q
  }
  return torch::stack(out, 2);
}

torch::Tensor delta_rule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& beta, const torch::Tensor& log_decay, int64_t chunk) {
  check(q, k, v, beta, log_decay);
  TORCH_CHECK(chunk >= 1, "delta_rule: chunk must be at least 1");
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), Dk = q.size(3), Dv = v.size(3);
  const bool decays = log_decay.defined();
  auto S = torch::zeros({B, H, Dk, Dv}, v.options());
  std::vector<torch::Tensor> out;
  for (int64_t start = 0; start < T; start += chunk) {
    const int64_t Q = std::min(chunk, T - start);
    const auto qc = q.narrow(2, start, Q), kc = k.narrow(2, start, Q), vc = v.narrow(2, start, Q);
    const auto bc = beta.narrow(2, start, Q).unsqueeze(-1);  // [B, H, Q, 1]
    const auto strict = torch::ones({Q, Q}, q.options().dtype(torch::kBool)).tril(-1);
    const auto causal = torch::ones({Q, Q}, q.options().dtype(torch::kBool)).tril();
    // decay[t][s] = G_t / G_s for s <= t (masked sums: no differences of long sums), G_t the
    // product of the chunk's decays up to t.
    torch::Tensor decay, g_t;  // [B, H, Q, Q], [B, H, Q, 1]
    if (decays) {
      const auto a = log_decay.narrow(2, start, Q);            // [B, H, Q]
      const auto rows = a.unsqueeze(-2).expand({B, H, Q, Q});  // [t][s] = a_s
      // sum of a_{s+1..t} for s < t: the row's entries past s and up to t.
      const auto upto = torch::where(causal, rows, torch::zeros({}, a.options()));
      const auto sums = upto.flip(-1).cumsum(-1).flip(-1);  // [t][s] = sum a_{s..t}
      const auto between = sums - torch::where(causal, rows, torch::zeros({}, a.options()));
      decay = torch::where(causal, torch::exp(between), torch::zeros({}, a.options()));
      g_t = torch::exp(a.cumsum(-1)).unsqueeze(-1);
    }
    auto kk = batched_matmul(kc, kc.transpose(-2, -1));  // [B, H, Q, Q]
    if (decays) kk = kk * decay;
    const auto lower = torch::where(strict, kk, torch::zeros({}, kk.options()));
    const auto k_read = decays ? kc * g_t : kc;  // diag(G) K
    // U = (I + diag(beta) A)^{-1} diag(beta) (V - diag(G) K S_0)
    const auto rhs = bc * (vc - batched_matmul(k_read, S));
    const auto U = batched_matmul(unit_lower_inverse(bc * lower), rhs);
    auto qk = batched_matmul(qc, kc.transpose(-2, -1));
    qk = decays ? qk * decay : torch::where(causal, qk, torch::zeros({}, qk.options()));
    const auto q_read = decays ? qc * g_t : qc;
    out.push_back(batched_matmul(q_read, S) + batched_matmul(qk, U));
    // S_C = G_Q S_0 + sum_s (G_Q / G_s) k_s u_s^T
    if (start + Q < T) {
      if (decays) {
        const auto last = decay.select(-2, Q - 1).unsqueeze(-1);  // [B, H, Q, 1]: G_Q / G_s
        S = g_t.select(-2, Q - 1).unsqueeze(-1) * S +
            batched_matmul((kc * last).transpose(-2, -1), U);
      } else {
        S = S + batched_matmul(kc.transpose(-2, -1), U);
      }
    }
  }
  return torch::cat(out, 2);
}

}  // namespace induct::nn
