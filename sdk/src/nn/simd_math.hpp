// Vectorisable exp, sigmoid and tanh for the SDK's fused CPU kernels (lstm.cpp,
// attention_kernel.cpp, elementwise.cpp). Internal: not installed.
#pragma once

#include <cmath>
#include <cstdint>

// A kernel compiled for AVX-512, AVX2 and the baseline, chosen at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define INDUCT_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define INDUCT_SIMD_CLONES
#endif

namespace induct::nn::simd {

// Written so that GCC vectorises the loops that call them (LibTorch's vectorised versions work
// on whole tensors, one operation each). exp: Cephes' range reduction and polynomial, relative
// error below 2e-7 on [-87, 88]; inputs are clamped there.
inline float exp_approx(float x) {
  x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;  // (std::fmin/fmax do not vectorise)
  // Round x / ln 2 to the nearest integer (adding and removing 1.5 * 2^23 does it in float).
  const float shifter = 12582912.0f;
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n
  return p * __builtin_bit_cast(float, bits);
}
inline double exp_approx(double x) { return std::exp(x); }  // double: tests and references

inline float sigmoid_approx(float x) { return 1.0f / (1.0f + exp_approx(-x)); }
inline double sigmoid_approx(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The gradient g through SiLU at x: g silu'(x) = g s (1 + x (1 - s)), s = sigmoid(x) (given:
// the callers have it already, for silu(x) = x s itself).
template <class T>
inline T silu_backward(T g, T x, T s) {
  return g * s * (T(1) + x * (T(1) - s));
}

// softplus(x) = log(1 + e^x) = max(x, 0) + log1p(w), w = e^-|x| in (0, 1], with
// log1p(w) = 2 atanh(s), s = w / (2 + w) in (0, 1/3], by its odd series to s^13 (relative
// error below 1e-8 before rounding; exact for small w, where log1p(w) = w).
inline float softplus_approx(float x) {
  const float w = exp_approx(x < 0 ? x : -x);
  const float s = w / (2.0f + w), s2 = s * s;
  float p = 1.0f / 13;
  p = p * s2 + 1.0f / 11;
  p = p * s2 + 1.0f / 9;
  p = p * s2 + 1.0f / 7;
  p = p * s2 + 1.0f / 5;
  p = p * s2 + 1.0f / 3;
  return (x > 0 ? x : 0.0f) + 2.0f * s * (1.0f + s2 * p);
}
inline double softplus_approx(double x) {
  return (x > 0 ? x : 0.0) + std::log1p(std::exp(-std::abs(x)));
}

// Near 0, Cephes' odd polynomial (1 - 2 / (e^2x + 1) loses digits there); elsewhere via exp.
inline float tanh_approx(float x) {
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float large = 1.0f - 2.0f / (exp_approx(2.0f * x) + 1.0f);
  return x > -0.625f && x < 0.625f ? small : large;
}

}  // namespace induct::nn::simd
