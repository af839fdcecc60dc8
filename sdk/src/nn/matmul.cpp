#include "induct/nn/matmul.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "gemm.hpp"

namespace induct::nn {

namespace {

// An operand [..., rows, cols] as the products read it: its memory, contiguous, either the
// matrix itself or its transpose.
struct Operand {
  at::Tensor stored;   // contiguous: [..., rows, cols], or [..., cols, rows] when transposed
  bool trans = false;  // stored holds the transpose
};

Operand operand(const at::Tensor& x) {
  if (x.is_contiguous()) return {x, false};
  const auto t = x.transpose(-2, -1);
  if (t.is_contiguous()) return {t, true};
  return {x.contiguous(), false};
}

// C_i = op(A_i) op(B_i) for every batch item i; op(A) [M, K], op(B) [K, N], C [M, N] row-major.
void products(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A,
              int64_t lda, const float* B, int64_t ldb, float* C) {
  for (int64_t i = 0; i < batch; ++i)
    sgemm(ta, tb, M, N, K, 1, A + i * M * K, lda, B + i * K * N, ldb, 0, C + i * M * N, N);
}

class BatchedMatmul : public torch::autograd::Function<BatchedMatmul> {
 public:
  // a, b: the operands' stored memory; ta, tb: whether each holds the transpose.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const torch::Tensor& a, const torch::Tensor& b,
                                                bool ta, bool tb) {
    const int64_t M = ta ? a.size(-1) : a.size(-2), K = ta ? a.size(-2) : a.size(-1);
    const int64_t N = tb ? b.size(-2) : b.size(-1);
    auto sizes = a.sizes().vec();
    sizes[sizes.size() - 2] = M;
    sizes.back() = N;
    auto c = at::empty(sizes, a.options());
    const int64_t batch = a.numel() / (M * K);
    products(batch, ta, tb, M, N, K, a.data_ptr<float>(), a.size(-1), b.data_ptr<float>(),
             b.size(-1), c.data_ptr<float>());
    ctx->save_for_backward({a, b});
    ctx->saved_data["ta"] = ta;
    ctx->saved_data["tb"] = tb;
    return {c};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& a = saved[0];
    const auto& b = saved[1];
    const bool ta = ctx->saved_data["ta"].toBool(), tb = ctx->saved_data["tb"].toBool();
    const int64_t M = ta ? a.size(-1) : a.size(-2), K = ta ? a.size(-2) : a.size(-1);
    const int64_t N = tb ? b.size(-2) : b.size(-1);
    const int64_t batch = a.numel() / (M * K);
    const auto dc = grads[0].contiguous();  // [..., M, N]
    // In the stored layouts: da (or its transpose) = dc op(B)^T, db = op(A)^T dc.
    auto da = at::empty(a.sizes(), a.options()), db = at::empty(b.sizes(), b.options());
    if (ta)  // da^T [K, M] = op(B) dc^T
      products(batch, tb, true, K, M, N, b.data_ptr<float>(), b.size(-1), dc.data_ptr<float>(), N,
               da.data_ptr<float>());
    else  // da [M, K] = dc op(B)^T
      products(batch, false, !tb, M, K, N, dc.data_ptr<float>(), N, b.data_ptr<float>(), b.size(-1),
               da.data_ptr<float>());
    if (tb)  // db^T [N, K] = dc^T op(A)
      products(batch, true, ta, N, K, M, dc.data_ptr<float>(), N, a.data_ptr<float>(), a.size(-1),
               db.data_ptr<float>());
    else  // db [K, N] = op(A)^T dc
      products(batch, !ta, false, K, N, M, a.data_ptr<float>(), a.size(-1), dc.data_ptr<float>(), N,
               db.data_ptr<float>());
    return {da, db, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor batched_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.dim() >= 2 && b.dim() >= 2 && a.size(-1) == b.size(-2), "batched_matmul: shapes ",
              a.sizes(), " and ", b.sizes(), " do not multiply");
  if (!(a.device().is_cpu() && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat &&
        a.dim() == b.dim() && a.sizes().slice(0, a.dim() - 2) == b.sizes().slice(0, b.dim() - 2) &&
        a.numel() > 0 && b.numel() > 0))
    return torch::matmul(a, b);
  const Operand x = operand(a), y = operand(b);
  return BatchedMatmul::apply(x.stored, y.stored, x.trans, y.trans)[0];
}

}  // namespace induct::nn
