#include "induct/nn/scan.hpp"

namespace induct::nn {

torch::Tensor selective_scan(const torch::Tensor& x, const torch::Tensor& delta,
                             const torch::Tensor& A, const torch::Tensor& Bm,
                             const torch::Tensor& C, const torch::Tensor& D) {
  const int64_t batch = x.size(0), Di = x.size(2), N = A.size(1);
  auto h = torch::zeros({batch, Di, N}, x.options());  // [B, Di, N]
  // unbind, not select(t): select on a tensor that requires grad adds a full-size zero
  // gradient per step in backward (quadratic in T).
  auto xs = x.unbind(1), ds = delta.unbind(1), bs = Bm.unbind(1), cs = C.unbind(1);
  std::vector<torch::Tensor> ys;
  ys.reserve(xs.size());
  for (size_t t = 0; t < xs.size(); ++t) {
    auto decay = torch::exp(ds[t].unsqueeze(-1) * A);                          // [B, Di, N]
    auto drive = (ds[t] * xs[t]).unsqueeze(-1) * bs[t].unsqueeze(1);           // [B, Di, N]
    h = decay * h + drive;
    ys.push_back(torch::bmm(h, cs[t].unsqueeze(-1)).squeeze(-1));              // [B, Di]
  }
  return torch::stack(ys, 1) + x * D;                                          // [B, T, Di]
}

}  // namespace induct::nn
