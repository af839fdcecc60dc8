// The SDK's shared blocks (induct/nn): the fused selective scan against its autograd
// reference, forward and backward; the fused LSTM layer against LibTorch's; rotary
// embeddings; RMSNorm.
#define BOOST_TEST_MODULE nn
#include <boost/test/unit_test.hpp>

#include <torch/torch.h>

#include "induct/nn/attention.hpp"
#include "induct/nn/lstm.hpp"
#include "induct/nn/norms.hpp"
#include "induct/nn/scan.hpp"
#include "util/process.hpp"

namespace {
struct Process {
  Process() { induct::configure_process(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(Process);

std::vector<torch::Tensor> scan_inputs(torch::Dtype dtype) {
  torch::manual_seed(11);
  const int64_t B = 3, T = 7, Di = 5, N = 4;
  auto opts = torch::TensorOptions().dtype(dtype);
  return {torch::randn({B, T, Di}, opts), torch::rand({B, T, Di}, opts) * 0.5 + 0.01,
          -torch::rand({Di, N}, opts) * 2 - 0.1, torch::randn({B, T, N}, opts),
          torch::randn({B, T, N}, opts), torch::randn({Di}, opts)};
}
}  // namespace

BOOST_AUTO_TEST_CASE(fused_scan_matches_the_reference_forward_and_backward) {
  auto run = [](bool fused) {
    auto inputs = scan_inputs(torch::kDouble);
    for (auto& t : inputs) t.requires_grad_(true);
    auto y = (fused ? induct::nn::selective_scan : induct::nn::selective_scan_reference)(
        inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], inputs[5]);
    auto weights = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes());
    (y * weights).sum().backward();
    std::vector<torch::Tensor> out{y.detach()};
    for (auto& t : inputs) out.push_back(t.grad());
    return out;
  };
  auto fused = run(true), reference = run(false);
  const char* names[] = {"y", "dx", "ddelta", "dA", "dB", "dC", "dD"};
  for (size_t i = 0; i < fused.size(); ++i)
    BOOST_TEST(torch::allclose(fused[i], reference[i], 1e-10, 1e-12), names[i]);
}

BOOST_AUTO_TEST_CASE(fused_scan_passes_gradcheck) {
  auto inputs = scan_inputs(torch::kDouble);
  for (auto& t : inputs) t.requires_grad_(true);
  // Finite differences against the fused backward, element by element for the small A.
  auto f = [&](const torch::Tensor& A) {
    return induct::nn::selective_scan(inputs[0], inputs[1], A, inputs[3], inputs[4], inputs[5]).sum();
  };
  auto A = inputs[2].detach().clone().requires_grad_(true);
  f(A).backward();
  auto numeric = torch::zeros_like(A);
  const double eps = 1e-6;
  for (int64_t i = 0; i < A.numel(); ++i) {
    auto plus = A.detach().clone(), minus = A.detach().clone();
    plus.view(-1)[i] += eps;
    minus.view(-1)[i] -= eps;
    numeric.view(-1)[i] = (f(plus).item<double>() - f(minus).item<double>()) / (2 * eps);
  }
  BOOST_TEST(torch::allclose(A.grad(), numeric, 1e-6, 1e-8));
}

BOOST_AUTO_TEST_CASE(fused_scan_in_float_agrees_with_double) {
  auto d = scan_inputs(torch::kDouble);
  std::vector<torch::Tensor> f;
  for (const auto& t : d) f.push_back(t.to(torch::kFloat));
  auto yd = induct::nn::selective_scan(d[0], d[1], d[2], d[3], d[4], d[5]);
  auto yf = induct::nn::selective_scan(f[0], f[1], f[2], f[3], f[4], f[5]);
  BOOST_TEST(torch::allclose(yf.to(torch::kDouble), yd, 1e-5, 1e-5));
}

BOOST_AUTO_TEST_CASE(fused_lstm_matches_libtorch_forward_and_backward) {
  // The fused kernel runs on float CPU tensors; double tensors take LibTorch's lstm: the
  // reference. Gate pre-activations from about -10 to 10 (scale 3) reach both saturated ends.
  for (double scale : {0.5, 3.0}) {
    auto run = [&](torch::Dtype dtype) {
      torch::manual_seed(5);
      const int64_t B = 3, T = 9, I = 6, H = 20;  // H not a multiple of the vector width
      auto opts = torch::TensorOptions().dtype(torch::kDouble);
      std::vector<torch::Tensor> in{torch::randn({B, T, I}, opts), torch::randn({4 * H, I}, opts) * scale / 2,
                                    torch::randn({4 * H, H}, opts) * scale / 4, torch::randn({4 * H}, opts),
                                    torch::randn({4 * H}, opts)};
      for (auto& t : in) t = t.to(dtype).requires_grad_(true);
      auto y = induct::nn::lstm_layer(in[0], in[1], in[2], in[3], in[4]);
      auto weights = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
      (y * weights).sum().backward();
      std::vector<torch::Tensor> out{y.detach().to(torch::kDouble)};
      for (auto& t : in) out.push_back(t.grad().to(torch::kDouble));
      return out;
    };
    auto fused = run(torch::kFloat), reference = run(torch::kDouble);
    const char* names[] = {"h", "dx", "dw_ih", "dw_hh", "db_ih", "db_hh"};
    for (size_t i = 0; i < fused.size(); ++i) {
      const double error = (fused[i] - reference[i]).abs().max().item<double>();
      BOOST_TEST(error < 2e-5, names[i] << " at scale " << scale << ": max error " << error);
    }
  }
}

BOOST_AUTO_TEST_CASE(rotary_preserves_norms_and_depends_on_offsets_only) {
  auto tables = induct::nn::rotary_tables(8, 16, 10000);
  torch::manual_seed(2);
  auto q = torch::randn({1, 1, 1, 8}).expand({1, 1, 16, 8}).contiguous();
  auto k = torch::randn({1, 1, 1, 8}).expand({1, 1, 16, 8}).contiguous();
  auto rq = induct::nn::apply_rotary(q, tables.cos, tables.sin);
  auto rk = induct::nn::apply_rotary(k, tables.cos, tables.sin);
  BOOST_TEST(torch::allclose(rq.norm(2, -1), q.norm(2, -1), 1e-5, 1e-6));
  // <R_i q, R_j k> depends on i - j only.
  auto dot = [&](int64_t i, int64_t j) { return (rq[0][0][i] * rk[0][0][j]).sum().item<double>(); };
  BOOST_TEST(std::abs(dot(5, 2) - dot(12, 9)) < 1e-4);
  BOOST_TEST(std::abs(dot(5, 2) - dot(5, 3)) > 1e-4);
  // Partial rotary leaves the other features alone.
  auto partial = induct::nn::rotary_tables(4, 16, 10000);
  auto rp = induct::nn::apply_rotary(q, partial.cos, partial.sin);
  BOOST_TEST(torch::equal(rp.narrow(-1, 4, 4), q.narrow(-1, 4, 4)));
}

BOOST_AUTO_TEST_CASE(rms_norm_normalises_the_last_dimension) {
  induct::nn::RMSNorm norm(6);
  auto x = torch::randn({2, 3, 6}) * 5;
  auto y = norm->forward(x);
  auto rms = y.pow(2).mean(-1).sqrt();
  BOOST_TEST(torch::allclose(rms, torch::ones_like(rms), 1e-3, 1e-3));
}
