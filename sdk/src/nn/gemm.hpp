// Row-major single-precision matrix products for the SDK's CPU kernels (linear.cpp, lstm.cpp),
// on oneDNN's sgemm, and the bias passes around them. Internal: not installed.
#pragma once

#include <cstdint>

namespace induct::nn {

// C[M, N] = alpha op(A) op(B) + beta C, row-major; op transposes when trans_a / trans_b.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// y[m, :] = bias for each of the M rows of y [M, N] (a product then adds to them with beta 1).
void bias_rows(int64_t M, int64_t N, const float* bias, float* y);

// out[n] = sum over m of g[m, n], g [M, N] row-major (a bias's gradient).
void column_sums(int64_t M, int64_t N, const float* g, float* out);

// After a product u [M, N]: u += bias on each row, y = GELU(u), exact (erf) or the tanh
// approximation; one pass (elementwise.cpp). With a null bias u is only read (GELU alone).
void bias_gelu(int64_t M, int64_t N, const float* bias, bool exact, float* u, float* y);

// Its backward: du = dy GELU'(u) and, when dbias is not null, dbias = the column sums of du.
void gelu_bias_backward(int64_t M, int64_t N, const float* u, const float* dy, bool exact,
                        float* du, float* dbias);

}  // namespace induct::nn
