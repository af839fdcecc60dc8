#include "induct/nn/delta.hpp"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>

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

// (I + N)^{-1} for strictly lower triangular N [..., Q, Q], by the recursive block inverse
//   [[A, 0], [C, D]]^{-1} = [[A^{-1}, 0], [-D^{-1} C A^{-1}, D^{-1}]]
// level by level: the diagonal blocks of size 1 (ones), then all those of size 2, 4, ... at once
// (Q padded with zeros up to a power of two; the padding's rows and columns are the identity's).
// It multiplies only blocks of the inverse and of N (the inverse's entries stayed below 2 in
// every regime measured: unit keys, beta in [0, 2]), unlike the series (I - N)(I + N^2)...
// of SDK numerics 0.1.4, whose powers of N reach 1e10 in float32 with beta near 2 and
// correlated keys (flash-linear-attention's solve_tril merges its 16 x 16 blocks the same way).
// Any device: batched products.
torch::Tensor blocked_unit_lower_inverse(const torch::Tensor& n) {
  const int64_t Q = n.size(-1);
  int64_t P = 1;
  while (P < Q) P *= 2;
  const auto lead = n.sizes().slice(0, n.dim() - 2).vec();
  auto a = n.tril(-1);
  if (P != Q) a = torch::constant_pad_nd(a, {0, P - Q, 0, P - Q});
  a = a.reshape({-1, P, P});
  const int64_t R = a.size(0);
  auto x = torch::ones({R, P, 1, 1}, n.options());  // [R, blocks, size, size]
  for (int64_t b = 1; b < P; b *= 2) {
    const int64_t count = P / (2 * b);  // diagonal blocks of size 2b
    const auto blocks = a.view({R, count, 2 * b, count, 2 * b})
                            .diagonal(0, 1, 3)
                            .permute({0, 3, 1, 2});         // [R, count, 2b, 2b]
    const auto c = blocks.narrow(2, b, b).narrow(3, 0, b);  // lower-left quarter
    const auto pairs = x.view({R, count, 2, b, b});
    const auto upper = pairs.select(2, 0), lower = pairs.select(2, 1);
    const auto corner = -torch::matmul(torch::matmul(lower, c), upper);
    x = torch::cat(
        {torch::cat({upper, torch::zeros_like(upper)}, -1), torch::cat({corner, lower}, -1)}, -2);
  }
  auto inverse = x.view({R, P, P});
  if (P != Q) inverse = inverse.narrow(1, 0, Q).narrow(2, 0, Q);
  auto sizes = lead;
  sizes.push_back(Q);
  sizes.push_back(Q);
  return inverse.reshape(sizes);
}

// On the CPU in float32, forward substitution row by row, X_i = e_i - sum_{j < i} N_ij X_j
// (backward stable; Q^3 / 6 multiply-adds per matrix, where the block inverse's level-by-level
// products, concatenations and copies cost more than the arithmetic at Q = 16 to 64).
torch::Tensor substituted_unit_lower_inverse(const torch::Tensor& n) {
  const int64_t Q = n.size(-1);
  const auto a = n.contiguous();
  auto x = torch::zeros_like(a);
  const int64_t count = a.numel() / std::max<int64_t>(Q * Q, 1);
  const float* in = a.data_ptr<float>();
  float* out = x.data_ptr<float>();
  at::parallel_for(0, count, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* N = in + r * Q * Q;
      float* X = out + r * Q * Q;
      for (int64_t i = 0; i < Q; ++i) {
        float* row = X + i * Q;
        row[i] = 1.0f;
        for (int64_t j = 0; j < i; ++j) {  // row j of X is zero past column j
          const float coefficient = N[i * Q + j];
          const float* other = X + j * Q;
          for (int64_t col = 0; col <= j; ++col) row[col] -= coefficient * other[col];
        }
      }
    }
  });
  return x;
}

// The inverse as one autograd node: X = (I + N)^{-1} gives dN = -X^T dX X^T on the strictly
// lower part (the only entries the inverse reads), two products instead of autograd's walk back
// through every level. Forward substitution on the CPU in float32, the block inverse elsewhere
// (other types, other devices).
class UnitLowerInverse : public torch::autograd::Function<UnitLowerInverse> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& n) {
    auto x = n.device().is_cpu() && n.scalar_type() == torch::kFloat
                 ? substituted_unit_lower_inverse(n)
                 : blocked_unit_lower_inverse(n);
    ctx->save_for_backward({x});
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    const auto xt = x.transpose(-2, -1);
    return {-batched_matmul(batched_matmul(xt, grads[0]), xt).tril(-1)};
  }
};

torch::Tensor unit_lower_inverse(const torch::Tensor& n) { return UnitLowerInverse::apply(n); }

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

torch::Tensor delta_product(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            const torch::Tensor& beta, const torch::Tensor& log_decay,
                            int64_t householder, int64_t chunk) {
  const int64_t n = householder;
  TORCH_CHECK(n >= 1, "delta_product: householder must be at least 1");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && k.size(2) == q.size(2) * n,
              "delta_product: k must be [B, H, T n, D_k] for q [B, H, T, D_k]");
  TORCH_CHECK(!log_decay.defined() || log_decay.sizes() == q.sizes().slice(0, 3),
              "delta_product: log_decay must be [B, H, T] or undefined");
  if (n == 1) return delta_rule(q, k, v, beta, log_decay, chunk);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), Dk = q.size(3);
  const auto q_steps = q.unsqueeze(3).expand({B, H, T, n, Dk}).reshape({B, H, T * n, Dk});
  torch::Tensor decay_steps;  // the decay before each token's first step, none within
  if (log_decay.defined())
    decay_steps =
        torch::cat({log_decay.unsqueeze(-1), torch::zeros({B, H, T, n - 1}, log_decay.options())},
                   -1)
            .reshape({B, H, T * n});
  const auto o = delta_rule(q_steps, k, v, beta, decay_steps, chunk);  // [B, H, T n, D_v]
  return o.view({B, H, T, n, o.size(-1)}).select(3, n - 1);
}

}  // namespace induct::nn
