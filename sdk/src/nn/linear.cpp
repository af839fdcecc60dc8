#include "induct/nn/linear.hpp"

#include <ATen/ATen.h>
#if INDUCT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif
#include <torch/csrc/autograd/custom_function.h>

#include <cstring>

#include "gemm.hpp"
#include "simd_math.hpp"

namespace induct::nn {

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
#if INDUCT_HAVE_DNNL
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha,
                                          A, lda, B, ldb, beta, C, ldc);
  TORCH_CHECK(status == dnnl_success, "oneDNN sgemm failed (status ", static_cast<int>(status),
              ") for a ", M, " x ", K, " by ", K, " x ", N, " product");
#else
  // Built without oneDNN (a LibTorch that does not ship it, sdk/CMakeLists.txt): the same
  // product through LibTorch's own CPU GEMM, on views of the caller's buffers.
  const auto options = at::TensorOptions(at::kFloat);
  auto view = [&](const float* data, bool trans, int64_t rows, int64_t cols, int64_t ld) {
    // op(X) is [rows, cols]; X is stored row-major with leading dimension ld.
    at::Tensor x = trans
                       ? at::from_blob(const_cast<float*>(data), {cols, rows}, {ld, 1}, options).t()
                       : at::from_blob(const_cast<float*>(data), {rows, cols}, {ld, 1}, options);
    return x;
  };
  at::Tensor c = at::from_blob(C, {M, N}, {ldc, 1}, options);
  const at::Tensor a = view(A, trans_a, M, K, lda), b = view(B, trans_b, K, N, ldb);
  if (beta == 0.0f) {
    at::mm_out(c, a, b);
    if (alpha != 1.0f) c.mul_(alpha);
  } else {
    c.addmm_(a, b, beta, alpha);
  }
#endif
}

// (LibTorch's bias.expand({M, N}).contiguous() and g.sum(0) for these, a broadcasting copy
// through TensorIterator and a reduction across rows, were about 3% of a small Pythia step.)
void bias_rows(int64_t M, int64_t N, const float* bias, float* y) {
  for (int64_t m = 0; m < M; ++m)
    std::memcpy(y + m * N, bias, sizeof(float) * static_cast<size_t>(N));
}

namespace {
INDUCT_SIMD_CLONES void column_sums_kernel(int64_t M, int64_t N, const float* g, float* out) {
  for (int64_t n = 0; n < N; ++n) out[n] = 0;
  for (int64_t m = 0; m < M; ++m) {
    const float* row = g + m * N;
#pragma omp simd
    for (int64_t n = 0; n < N; ++n) out[n] += row[n];
  }
}
}  // namespace

void column_sums(int64_t M, int64_t N, const float* g, float* out) {
  column_sums_kernel(M, N, g, out);
}

namespace {

// y = act(x2 W^T + b): act 0 none, kGeluTanh or kGeluErf (with them forward keeps the
// pre-activation, and the bias and GELU are one pass each way around the products).
constexpr int64_t kNoActivation = 0, kGeluTanh = 1, kGeluErf = 2;

class FusedLinear : public torch::autograd::Function<FusedLinear> {
 public:
  // x2: [M, in] contiguous; weight [out, in] contiguous.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x2,
                            const at::Tensor& weight, const c10::optional<at::Tensor>& bias_or_none,
                            int64_t activation) {
    const at::Tensor bias = bias_or_none ? *bias_or_none : at::Tensor();
    const int64_t M = x2.size(0), K = x2.size(1), N = weight.size(0);
    auto y = at::empty({M, N}, x2.options());
    ctx->saved_data["bias"] = bias.defined();
    ctx->saved_data["activation"] = activation;
    if (activation != kNoActivation) {
      auto u = at::empty({M, N}, x2.options());
      sgemm(false, true, M, N, K, 1, x2.data_ptr<float>(), K, weight.data_ptr<float>(), K, 0,
            u.data_ptr<float>(), N);
      bias_gelu(M, N, bias.defined() ? bias.data_ptr<float>() : nullptr, activation == kGeluErf,
                u.data_ptr<float>(), y.data_ptr<float>());
      ctx->save_for_backward({x2, weight, u});
      return y;
    }
    float beta = 0;
    if (bias.defined()) {  // the product adds to the bias rows
      bias_rows(M, N, bias.data_ptr<float>(), y.data_ptr<float>());
      beta = 1;
    }
    sgemm(false, true, M, N, K, 1, x2.data_ptr<float>(), K, weight.data_ptr<float>(), K, beta,
          y.data_ptr<float>(), N);
    ctx->save_for_backward({x2, weight});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x2 = saved[0], &weight = saved[1];
    const int64_t M = x2.size(0), K = x2.size(1), N = weight.size(0);
    const int64_t activation = ctx->saved_data["activation"].toInt();
    const bool want_db = ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2);
    at::Tensor g, dx, dw, db;
    if (want_db) db = at::empty({N}, weight.options());
    if (activation != kNoActivation) {  // g: the gradient of the pre-activation
      const auto dy = grads[0].contiguous();
      g = at::empty({M, N}, dy.options());
      gelu_bias_backward(M, N, saved[2].data_ptr<float>(), dy.data_ptr<float>(),
                         activation == kGeluErf, g.data_ptr<float>(),
                         want_db ? db.data_ptr<float>() : nullptr);
    } else {
      g = grads[0].contiguous();
      if (want_db) column_sums(M, N, g.data_ptr<float>(), db.data_ptr<float>());
    }
    if (ctx->needs_input_grad(0)) {
      dx = at::empty({M, K}, x2.options());
      sgemm(false, false, M, K, N, 1, g.data_ptr<float>(), N, weight.data_ptr<float>(), K, 0,
            dx.data_ptr<float>(), K);
    }
    if (ctx->needs_input_grad(1)) {
      dw = at::empty({N, K}, weight.options());
      sgemm(true, false, N, K, M, 1, g.data_ptr<float>(), N, x2.data_ptr<float>(), K, 0,
            dw.data_ptr<float>(), K);
    }
    return {dx, dw, db, at::Tensor()};
  }
};

bool fusable(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() >= 1 &&
         weight.device().is_cpu() && weight.scalar_type() == at::kFloat && weight.dim() == 2 &&
         x.size(-1) == weight.size(1) &&
         (!bias.defined() ||
          (bias.scalar_type() == at::kFloat && bias.dim() == 1 && bias.size(0) == weight.size(0)));
}

at::Tensor fused_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                        int64_t activation) {
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  auto x2 = x.reshape({-1, x.size(-1)}).contiguous();
  c10::optional<at::Tensor> b;
  if (bias.defined()) b = bias.contiguous();
  return FusedLinear::apply(x2, weight.contiguous(), b, activation).view(sizes);
}

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (!fusable(x, weight, bias)) return at::linear(x, weight, bias);
  return fused_linear(x, weight, bias, kNoActivation);
}

at::Tensor linear_gelu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       bool exact) {
  if (!fusable(x, weight, bias)) {
    auto u = at::linear(x, weight, bias);
    return exact ? at::gelu(u) : at::gelu(u, "tanh");
  }
  return fused_linear(x, weight, bias, exact ? kGeluErf : kGeluTanh);
}

}  // namespace induct::nn
