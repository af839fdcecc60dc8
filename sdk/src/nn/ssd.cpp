#include "induct/nn/ssd.hpp"

#include <ATen/ATen.h>

#include <limits>

#include "induct/nn/matmul.hpp"

namespace induct::nn {

namespace {

void check_shapes(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& Bm,
                  const torch::Tensor& C) {
  TORCH_CHECK(x.dim() == 4, "ssd_scan: x must be [B, T, H, P]");
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2);
  TORCH_CHECK(a.dim() == 3 && a.size(0) == B && a.size(1) == T && a.size(2) == H,
              "ssd_scan: a must be [B, T, H] as x");
  TORCH_CHECK(
      Bm.dim() == 4 && Bm.size(0) == B && Bm.size(1) == T && Bm.size(2) >= 1 && H % Bm.size(2) == 0,
      "ssd_scan: B must be [B, T, G, N] with G dividing x's H");
  TORCH_CHECK(C.sizes() == Bm.sizes(), "ssd_scan: C must have B's shape");
}

// [..., G, N] -> [..., H, N] (dimension -2): head h reads group h / (H / G).
torch::Tensor per_head(const torch::Tensor& m, int64_t H) {
  const int64_t G = m.size(-2);
  return G == H ? m : m.repeat_interleave(H / G, -2);
}

// s[..., i, j] = a[..., j + 1] + ... + a[..., i] for j <= i (0 on the diagonal), -inf above:
// exp(s) is the decay from step j to step i. Masked cumulative sums, not differences of
// prefix sums, so no cancellation.  a: [..., Q] -> [..., Q, Q]
torch::Tensor segment_sums(const torch::Tensor& a) {
  const int64_t Q = a.size(-1);
  auto sizes = a.sizes().vec();
  sizes.push_back(Q);
  auto below = at::ones({Q, Q}, a.options().dtype(at::kBool)).tril(-1);
  auto s = a.unsqueeze(-1).expand(sizes).masked_fill(below.logical_not(), 0).cumsum(-2);
  auto on_or_below = at::ones({Q, Q}, a.options().dtype(at::kBool)).tril(0);
  return s.masked_fill(on_or_below.logical_not(), -std::numeric_limits<double>::infinity());
}

}  // namespace

torch::Tensor ssd_scan(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& Bm,
                       const torch::Tensor& C, int64_t chunk) {
  check_shapes(x, a, Bm, C);
  TORCH_CHECK(chunk >= 1, "ssd_scan: chunk must be at least 1");
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), P = x.size(3), N = Bm.size(3);
  if (T == 0) return at::zeros_like(x);
  const int64_t Q = std::min(chunk, T), chunks = (T + Q - 1) / Q, pad = chunks * Q - T;
  // Padding steps have x = 0 and a = 0: they add nothing and come after every real step.
  const int64_t G = Bm.size(2);
  auto xs = at::constant_pad_nd(x, {0, 0, 0, 0, 0, pad}).view({B, chunks, Q, H, P});
  auto as = at::constant_pad_nd(a, {0, 0, 0, pad}).view({B, chunks, Q, H}).permute({0, 3, 1, 2});
  auto bg = at::constant_pad_nd(Bm, {0, 0, 0, 0, 0, pad}).view({B, chunks, Q, G, N});
  auto cg = at::constant_pad_nd(C, {0, 0, 0, 0, 0, pad}).view({B, chunks, Q, G, N});
  auto a_cum = as.cumsum(-1);  // [B, H, c, Q]

  // 1. Within each chunk: y_i = sum_{j <= i} (C_i . B_j) exp(a_{j+1..i}) x_j. C_i . B_j once
  // per group, each of its heads with its own decays; the products per (batch, group or head,
  // chunk) run on batched_matmul (LibTorch's CPU bmm spends more on its per-item selects than
  // on these small products).
  const auto by_head = [](const torch::Tensor& t) { return t.permute({0, 3, 1, 2, 4}); };
  auto decay = at::exp(segment_sums(as));                                    // [B, H, c, Q, Q]
  auto within = batched_matmul(by_head(cg), by_head(bg).transpose(-2, -1));  // [B, G, c, Q, Q]
  auto scores =
      (within.unsqueeze(2) * decay.view({B, G, H / G, chunks, Q, Q})).reshape({B, H, chunks, Q, Q});
  auto y = batched_matmul(scores, by_head(xs)).permute({0, 2, 3, 1, 4});  // [B, c, Q, H, P]
  if (chunks > 1) {
    auto bs = per_head(bg, H), cs = per_head(cg, H);  // [B, c, Q, H, N]
    // 2. Each chunk's own final state: sum_j exp(a_{j+1..Q}) x_j B_j^T.
    auto to_end = at::exp(a_cum.narrow(-1, Q - 1, 1) - a_cum);              // [B, H, c, Q]
    auto states = at::einsum("bclhn,bhcl,bclhp->bchpn", {bs, to_end, xs});  // [B, c, H, P, N]
    // 3. The state entering chunk z: the earlier chunks' own states, each decayed across the
    // chunks between. With t_0 = 0 and t_k the total log decay of chunk k - 1, segment_sums(t)
    // at [z, c + 1] is the log decay from the end of chunk c to the start of chunk z (-inf
    // for c >= z, so chunk 0 starts from zero).
    auto totals = at::constant_pad_nd(a_cum.select(-1, Q - 1), {1, 0});  // [B, H, c + 1]
    auto across = at::exp(segment_sums(totals)).narrow(-2, 0, chunks).narrow(-1, 1, chunks);
    auto entering = at::einsum("bhzc,bchpn->bzhpn", {across, states});  // [B, c, H, P, N]
    // 4. Its contribution inside the chunk: y_i += exp(a_{1..i}) S_in C_i.
    y = y + at::einsum("bclhn,bchpn,bhcl->bclhp", {cs, entering, at::exp(a_cum)});
  }
  return y.reshape({B, chunks * Q, H, P}).narrow(1, 0, T);
}

torch::Tensor ssd_scan_reference(const torch::Tensor& x, const torch::Tensor& a,
                                 const torch::Tensor& Bm, const torch::Tensor& C) {
  check_shapes(x, a, Bm, C);
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), P = x.size(3), N = Bm.size(3);
  auto bs = per_head(Bm, H), cs = per_head(C, H);
  auto S = at::zeros({B, H, P, N}, x.options());
  std::vector<torch::Tensor> ys;
  for (int64_t t = 0; t < T; ++t) {
    S = at::exp(a.select(1, t)).unsqueeze(-1).unsqueeze(-1) * S +
        x.select(1, t).unsqueeze(-1) * bs.select(1, t).unsqueeze(2);
    ys.push_back((S * cs.select(1, t).unsqueeze(2)).sum(-1));  // [B, H, P]
  }
  return ys.empty() ? at::zeros_like(x) : at::stack(ys, 1);
}

}  // namespace induct::nn
