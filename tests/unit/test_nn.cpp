// The SDK's shared blocks (induct/nn): the fused selective scan against its autograd
// reference, forward and backward; Mamba-2's chunked SSD scan against its step-by-step
// recurrence; the fused LSTM and GRU layers, causal attention, GELU and dropout
// against LibTorch's operations; rotary embeddings; RMSNorm.
#define BOOST_TEST_MODULE nn
#include <torch/torch.h>

#include <boost/test/unit_test.hpp>

#include "induct/nn/attention.hpp"
#include "induct/nn/conv.hpp"
#include "induct/nn/delta.hpp"
#include "induct/nn/elementwise.hpp"
#include "induct/nn/gru.hpp"
#include "induct/nn/linear.hpp"
#include "induct/nn/loss.hpp"
#include "induct/nn/lstm.hpp"
#include "induct/nn/matmul.hpp"
#include "induct/nn/norms.hpp"
#include "induct/nn/scan.hpp"
#include "induct/nn/slstm.hpp"
#include "induct/nn/ssd.hpp"
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
  return {torch::randn({B, T, Di}, opts),        torch::rand({B, T, Di}, opts) * 0.5 + 0.01,
          -torch::rand({Di, N}, opts) * 2 - 0.1, torch::randn({B, T, N}, opts),
          torch::randn({B, T, N}, opts),         torch::randn({Di}, opts)};
}
// The scan of in = {x, delta, A, B, C, D} and, when `gated`, in[6] = the delta bias (with
// softplus) and in[7] = z, fused or the reference.
torch::Tensor scan(bool fused, const std::vector<torch::Tensor>& in, bool gated) {
  induct::nn::ScanOptions options;
  if (gated) options = {in[6], true, in[7]};
  return fused ? induct::nn::selective_scan(in[0], in[1], in[2], in[3], in[4], in[5], options)
               : induct::nn::selective_scan_reference(in[0], in[1], in[2], in[3], in[4], in[5],
                                                      options);
}
}  // namespace

BOOST_AUTO_TEST_CASE(fused_scan_matches_the_reference_forward_and_backward) {
  auto run = [](bool fused) {
    auto inputs = scan_inputs(torch::kDouble);
    for (auto& t : inputs) t.requires_grad_(true);
    auto y = scan(fused, inputs, false);
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
    return induct::nn::selective_scan(inputs[0], inputs[1], A, inputs[3], inputs[4], inputs[5])
        .sum();
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

// The float kernel as a model runs it: a state count that is not a multiple of the kernel's
// 16 lanes (padded inside), channels not a multiple of a vector, the decays exp(delta A) from
// the kernel's own exp; plain, and with Mamba's options (delta bias and softplus, the gate z).
// Against the reference in double, forward and every gradient; the fused kernel in double
// against the reference to rounding; then the float kernel with the batch split over two
// threads (gA, gD and the delta bias's gradient summed over chunks).
BOOST_AUTO_TEST_CASE(fused_scan_in_float_matches_the_reference_in_double_backward) {
  for (bool gated : {false, true}) {
    torch::manual_seed(12 + gated);
    const int64_t B = 5, T = 13, Di = 37, N = 20;
    auto opts = torch::TensorOptions().dtype(torch::kDouble);
    const std::vector<torch::Tensor> inputs{torch::randn({B, T, Di}, opts),
                                            gated ? torch::randn({B, T, Di}, opts) * 2 - 2
                                                  : torch::rand({B, T, Di}, opts) * 0.3 + 0.001,
                                            -torch::rand({Di, N}, opts) * 8 - 0.05,
                                            torch::randn({B, T, N}, opts),
                                            torch::randn({B, T, N}, opts),
                                            torch::randn({Di}, opts),
                                            torch::randn({Di}, opts),
                                            torch::randn({B, T, Di}, opts) * 2};
    auto weights = torch::linspace(-1, 1, B * T * Di, opts).reshape({B, T, Di});
    auto run = [&](bool fused, torch::Dtype dtype) {
      std::vector<torch::Tensor> in;
      for (const auto& t : inputs) in.push_back(t.to(dtype).clone().requires_grad_(true));
      auto y = scan(fused, in, gated);
      (y * weights.to(dtype)).sum().backward();
      std::vector<torch::Tensor> out{y.detach().to(torch::kDouble)};
      for (size_t i = 0; i < (gated ? 8 : 6); ++i) out.push_back(in[i].grad().to(torch::kDouble));
      return out;
    };
    const char* names[] = {"y", "dx", "ddelta", "dA", "dB", "dC", "dD", "ddelta_bias", "dz"};
    auto reference = run(false, torch::kDouble), fused = run(true, torch::kFloat);
    auto fused_double = run(true, torch::kDouble);
    for (size_t i = 0; i < fused.size(); ++i) {
      const double scale = reference[i].abs().max().item<double>();
      BOOST_TEST((fused[i] - reference[i]).abs().max().item<double>() < 1e-5 * scale,
                 names[i] << " gated=" << gated);
      BOOST_TEST(torch::allclose(fused_double[i], reference[i], 1e-10, 1e-12),
                 names[i] << " gated=" << gated);
    }
    at::set_num_threads(2);
    auto two_threads = run(true, torch::kFloat);
    at::set_num_threads(1);
    for (size_t i = 0; i < fused.size(); ++i)
      BOOST_TEST(torch::allclose(two_threads[i], fused[i], 1e-5, 1e-6),
                 names[i] << " gated=" << gated);
  }
}

// Wrong shapes are errors before the kernels read any memory.
BOOST_AUTO_TEST_CASE(fused_scan_and_conv_refuse_wrong_shapes) {
  auto in = scan_inputs(torch::kFloat);  // x [3, 7, 5], A [5, 4], B and C [3, 7, 4]
  auto scan_with = [&](int replaced, const torch::Tensor& t,
                       const induct::nn::ScanOptions& o = {}) {
    auto args = in;
    if (replaced >= 0) args[replaced] = t;
    return induct::nn::selective_scan(args[0], args[1], args[2], args[3], args[4], args[5], o);
  };
  BOOST_CHECK_NO_THROW(scan_with(-1, {}));
  BOOST_CHECK_THROW(scan_with(1, torch::rand({3, 6, 5})), c10::Error);  // delta
  BOOST_CHECK_THROW(scan_with(2, torch::rand({4, 4})), c10::Error);     // A
  BOOST_CHECK_THROW(scan_with(3, torch::rand({3, 7, 5})), c10::Error);  // B
  BOOST_CHECK_THROW(scan_with(5, torch::rand({4})), c10::Error);        // D
  BOOST_CHECK_THROW(scan_with(-1, {}, {torch::rand({4}), true, {}}), c10::Error);
  BOOST_CHECK_THROW(scan_with(-1, {}, {{}, false, torch::rand({3, 7, 4})}), c10::Error);
  BOOST_CHECK_THROW(
      induct::nn::causal_conv1d(torch::rand({3, 7, 5}), torch::rand({4, 4}), {}, true), c10::Error);
  BOOST_CHECK_THROW(induct::nn::causal_conv1d(torch::rand({3, 7, 5}), torch::rand({5, 4}),
                                              torch::rand({4}), true),
                    c10::Error);
}

namespace {

// SSD inputs {x, a, B, C}: 4 heads in 2 groups, head dimension 3, state size 5, decays
// exp(a) in (0.05, 1) (a few at 1, as the padding steps have).
std::vector<torch::Tensor> ssd_inputs(int64_t T, torch::Dtype dtype) {
  torch::manual_seed(21);
  const int64_t B = 2, H = 4, P = 3, G = 2, N = 5;
  auto opts = torch::TensorOptions().dtype(dtype);
  auto a = -torch::rand({B, T, H}, opts) * 3;
  a.index_put_({0, 0}, 0.0);
  return {torch::randn({B, T, H, P}, opts), a, torch::randn({B, T, G, N}, opts),
          torch::randn({B, T, G, N}, opts)};
}

// y and the gradients of x, a, B and C for fixed upstream weights; chunk 0: the reference.
std::vector<torch::Tensor> ssd_run(const std::vector<torch::Tensor>& inputs, int64_t chunk) {
  std::vector<torch::Tensor> in;
  for (const auto& t : inputs) in.push_back(t.clone().requires_grad_(true));
  auto y = chunk > 0 ? induct::nn::ssd_scan(in[0], in[1], in[2], in[3], chunk)
                     : induct::nn::ssd_scan_reference(in[0], in[1], in[2], in[3]);
  auto weights = torch::linspace(-1, 1, y.numel(), y.options()).reshape(y.sizes());
  (y * weights).sum().backward();
  std::vector<torch::Tensor> out{y.detach().to(torch::kDouble)};
  for (auto& t : in) out.push_back(t.grad().to(torch::kDouble));
  return out;
}

}  // namespace

// The chunked algorithm equals the recurrence, forward and backward, for a chunk of one step,
// chunks that do not divide T (padding), one chunk exactly T and one longer than T; in double
// to rounding, and in float to 1e-5 of each value's scale.
BOOST_AUTO_TEST_CASE(chunked_ssd_matches_the_recurrence_forward_and_backward) {
  const char* names[] = {"y", "dx", "da", "dB", "dC"};
  const int64_t T = 11;
  auto inputs = ssd_inputs(T, torch::kDouble);
  auto reference = ssd_run(inputs, 0);
  std::vector<torch::Tensor> in_float;
  for (const auto& t : inputs) in_float.push_back(t.to(torch::kFloat));
  for (int64_t chunk : {1, 3, 4, 11, 16}) {
    auto chunked = ssd_run(inputs, chunk), in_float_run = ssd_run(in_float, chunk);
    for (size_t i = 0; i < reference.size(); ++i) {
      BOOST_TEST(torch::allclose(chunked[i], reference[i], 1e-10, 1e-12),
                 names[i] << " chunk " << chunk);
      const double scale = reference[i].abs().max().item<double>();
      BOOST_TEST((in_float_run[i] - reference[i]).abs().max().item<double>() < 1e-5 * scale,
                 names[i] << " chunk " << chunk << " in float");
    }
  }
}

namespace {

// q, k (unit rows, as DeltaNet's), v, beta in (0, 2) (negative eigenvalues) and log decays <= 0.
std::vector<torch::Tensor> delta_inputs(int64_t T, torch::Dtype dtype) {
  torch::manual_seed(22);
  const int64_t B = 2, H = 3, Dk = 4, Dv = 5;
  auto opts = torch::TensorOptions().dtype(dtype);
  auto unit = [&] {
    auto x = torch::randn({B, H, T, Dk}, opts);
    return x / x.norm(2, -1, true);
  };
  return {unit(), unit(), torch::randn({B, H, T, Dv}, opts), torch::rand({B, H, T}, opts) * 2,
          -torch::rand({B, H, T}, opts)};
}

// o and the gradients of q, k, v, beta (and the log decays) for fixed upstream weights; chunk 0:
// the reference.
std::vector<torch::Tensor> delta_run(const std::vector<torch::Tensor>& inputs, bool decays,
                                     int64_t chunk) {
  std::vector<torch::Tensor> in;
  for (const auto& t : inputs) in.push_back(t.clone().requires_grad_(true));
  const torch::Tensor g = decays ? in[4] : torch::Tensor();
  auto o = chunk > 0 ? induct::nn::delta_rule(in[0], in[1], in[2], in[3], g, chunk)
                     : induct::nn::delta_rule_reference(in[0], in[1], in[2], in[3], g);
  auto weights = torch::linspace(-1, 1, o.numel(), o.options()).reshape(o.sizes());
  (o * weights).sum().backward();
  std::vector<torch::Tensor> out{o.detach().to(torch::kDouble)};
  for (size_t i = 0; i < (decays ? 5u : 4u); ++i) out.push_back(in[i].grad().to(torch::kDouble));
  return out;
}

}  // namespace

// The chunked delta rule equals the recurrence, forward and every gradient, with and without
// decays, for chunks of one step, chunks that do not divide T, one chunk of exactly T and one
// longer; in double to rounding, and in float to 1e-4 of each value's scale.
BOOST_AUTO_TEST_CASE(chunked_delta_rule_matches_the_recurrence_forward_and_backward) {
  const char* names[] = {"o", "dq", "dk", "dv", "dbeta", "dlog_decay"};
  const int64_t T = 11;
  auto inputs = delta_inputs(T, torch::kDouble);
  std::vector<torch::Tensor> in_float;
  for (const auto& t : inputs) in_float.push_back(t.to(torch::kFloat));
  for (bool decays : {false, true}) {
    auto reference = delta_run(inputs, decays, 0);
    for (int64_t chunk : {1, 3, 4, 11, 16}) {
      auto chunked = delta_run(inputs, decays, chunk),
           in_float_run = delta_run(in_float, decays, chunk);
      for (size_t i = 0; i < reference.size(); ++i) {
        BOOST_TEST(torch::allclose(chunked[i], reference[i], 1e-9, 1e-11),
                   names[i] << " chunk " << chunk << " decays " << decays);
        const double scale = reference[i].abs().max().item<double>();
        BOOST_TEST((in_float_run[i] - reference[i]).abs().max().item<double>() < 1e-4 * scale,
                   names[i] << " chunk " << chunk << " decays " << decays << " in float");
      }
    }
  }
}

// Where state tracking lives: beta in [1.5, 2] (eigenvalues near -1) and keys of size 4 drawn
// from three directions (strongly correlated, as a head that tracks S_3 uses them), 256 steps,
// the chunks DeltaNet and DeltaProduct use. The chunked float32 output and every gradient stay
// within 1e-4 of the step-by-step recurrence in double (relative to each one's scale), with no
// decay, with decays near 1 and with decays near 0. (The series inverse (I - N)(I + N^2)... the
// SDK used before numerics 0.1.5 was off by 3e5 at chunk 32 and 2e-3 at chunk 16 here.)
BOOST_AUTO_TEST_CASE(chunked_delta_rule_holds_with_negative_eigenvalues_and_correlated_keys) {
  const char* names[] = {"o", "dq", "dk", "dv", "dbeta", "dlog_decay"};
  torch::manual_seed(51);
  const int64_t B = 2, H = 2, T = 256, Dk = 4, Dv = 3;
  auto opts = torch::TensorOptions().dtype(torch::kDouble);
  auto directions = torch::randn({3, Dk}, opts);
  directions = directions / directions.norm(2, -1, true);
  const auto pick = torch::randint(0, 3, {B, H, T}, torch::kLong);
  const auto k = directions.index({pick});  // [B, H, T, Dk]
  auto q = torch::randn({B, H, T, Dk}, opts);
  q = q / q.norm(2, -1, true);
  const auto v = torch::randn({B, H, T, Dv}, opts);
  const auto beta = 1.5 + 0.5 * torch::rand({B, H, T}, opts);
  struct Decay {
    const char* name;
    torch::Tensor log_decay;
  };
  const std::vector<Decay> decays = {{"none", torch::Tensor()},
                                     {"near 1", -1e-3 * torch::rand({B, H, T}, opts)},
                                     {"near 0", -5.0 - 5.0 * torch::rand({B, H, T}, opts)}};
  for (const auto& decay : decays) {
    const bool decayed = decay.log_decay.defined();
    std::vector<torch::Tensor> inputs{q, k, v, beta};
    inputs.push_back(decayed ? decay.log_decay : -torch::ones({B, H, T}, opts));
    const auto reference = delta_run(inputs, decayed, 0);
    std::vector<torch::Tensor> in_float;
    for (const auto& t : inputs) in_float.push_back(t.to(torch::kFloat));
    for (int64_t chunk : {16, 32, 64}) {
      const auto chunked = delta_run(in_float, decayed, chunk);
      for (size_t i = 0; i < reference.size(); ++i) {
        const double scale = reference[i].abs().max().item<double>();
        const double error = (chunked[i] - reference[i]).abs().max().item<double>() / scale;
        BOOST_TEST(error < 1e-4, names[i] << " chunk " << chunk << " decay " << decay.name
                                          << ": relative error " << error);
      }
    }
  }
}

// Exact S_3 words: two Householder steps per token, each a transposition (beta = 2, key
// (e_a - e_b) / sqrt 2) or nothing (beta = 0), realise every permutation of a 3-dimensional
// subspace; three first steps write the identity into the state (beta = 1, k = v = e_i), and
// head h reads row h of the state (q = e_h). Over 256 tokens (515 steps) the chunked float32
// state equals the permutation matrix of the word so far to 1e-4 at chunks 16, 32 and 64.
BOOST_AUTO_TEST_CASE(chunked_delta_rule_tracks_exact_s3_words) {
  torch::manual_seed(3);
  const int64_t B = 3, H = 3, tokens = 256, steps = 3 + 2 * tokens, Dk = 4, Dv = 3;
  auto q = torch::zeros({B, H, steps, Dk}), k = torch::zeros({B, H, steps, Dk}),
       v = torch::zeros({B, H, steps, Dv}), beta = torch::zeros({B, H, steps});
  for (int64_t h = 0; h < H; ++h) q.select(1, h).select(-1, h).fill_(1.0);
  for (int64_t i = 0; i < 3; ++i) {
    k.select(2, i).select(-1, i).fill_(1.0);
    v.select(2, i).select(-1, i).fill_(1.0);
    beta.select(2, i).fill_(1.0);
  }
  // The exact state: rows swapped by each transposition (integers, so double is exact).
  auto state = torch::eye(3, torch::kDouble).repeat({B, 1, 1});  // [B, 3, 3]
  auto expected = torch::zeros({B, steps, 3, 3}, torch::kDouble);
  const int64_t pairs[3][2] = {{0, 1}, {1, 2}, {0, 2}};
  const auto draws = torch::randint(0, 4, {B, steps}, torch::kLong);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t s = 3; s < steps; ++s) {
      const int64_t draw = draws[b][s].item<int64_t>();
      if (draw < 3) {  // a transposition; 3: the identity step (beta = 0)
        const int64_t a = pairs[draw][0], c = pairs[draw][1];
        auto key = k[b].select(1, s);  // [H, Dk]
        key.select(-1, a).fill_(1.0 / std::sqrt(2.0));
        key.select(-1, c).fill_(-1.0 / std::sqrt(2.0));
        beta[b].select(1, s).fill_(2.0);
        const auto row_a = state[b][a].clone();
        state[b][a].copy_(state[b][c]);
        state[b][c].copy_(row_a);
      }
      expected[b][s].copy_(state[b]);
    }
  }
  // o[b, h, s, :] = S^T q = row h of the state.
  const auto want = expected.narrow(1, 3, steps - 3).permute({0, 2, 1, 3});  // [B, H, steps-3, 3]
  for (int64_t chunk : {16, 32, 64}) {
    const auto o = induct::nn::delta_rule(q, k, v, beta, {}, chunk).to(torch::kDouble);
    const double error = (o.narrow(2, 3, steps - 3) - want).abs().max().item<double>();
    BOOST_TEST(error < 1e-4,
               "chunk " << chunk << ": the state is off the permutation by " << error);
  }
  const auto step = induct::nn::delta_rule_reference(q, k, v, beta, {}).to(torch::kDouble);
  BOOST_TEST((step.narrow(2, 3, steps - 3) - want).abs().max().item<double>() < 1e-4);
}

// The rule itself on a hand-checked case: beta = 1 with a unit key replaces the value stored
// under that key (the state reads back the new value), beta = 2 flips the old one's sign.
BOOST_AUTO_TEST_CASE(delta_rule_overwrites_along_the_key) {
  auto q = torch::zeros({1, 1, 2, 2}), k = torch::zeros({1, 1, 2, 2}),
       v = torch::zeros({1, 1, 2, 1});
  k.index_put_({0, 0, 0, 0}, 1.0);  // both steps write under e_1
  k.index_put_({0, 0, 1, 0}, 1.0);
  q.index_put_({0, 0, 1, 0}, 1.0);  // the second step reads e_1
  v.index_put_({0, 0, 0, 0}, 3.0);
  v.index_put_({0, 0, 1, 0}, 5.0);
  for (double b2 : {1.0, 2.0}) {
    auto beta = torch::tensor({1.0, b2}).reshape({1, 1, 2});
    for (int64_t chunk : {1, 2}) {
      const double read =
          induct::nn::delta_rule(q, k, v, beta, {}, chunk)[0][0][1][0].item<double>();
      // S = 3 e_1 after step 1; step 2: S + e_1 (b2 (5 - 3)): 5 for b2 = 1, 7 = -3 + 2*5 for b2
      // = 2.
      BOOST_TEST(read == (b2 == 1.0 ? 5.0 : 7.0), "beta " << b2 << " chunk " << chunk);
    }
  }
  BOOST_CHECK_THROW(induct::nn::delta_rule(q, k, v, torch::ones({1, 1, 3}), {}, 2), c10::Error);
  BOOST_CHECK_THROW(induct::nn::delta_rule(q, k, v, torch::ones({1, 1, 2}), {}, 0), c10::Error);
}

// The recurrence itself against finite differences of its definition, for the decays (the
// input the chunked form treats most differently), on the chunked path with two chunks.
BOOST_AUTO_TEST_CASE(chunked_ssd_gradient_of_the_decays_matches_finite_differences) {
  auto in = ssd_inputs(6, torch::kDouble);
  auto f = [&](const torch::Tensor& a) {
    return induct::nn::ssd_scan(in[0], a, in[2], in[3], 4).pow(2).sum();
  };
  auto a = in[1].clone().requires_grad_(true);
  f(a).backward();
  auto numeric = torch::zeros_like(a);
  const double eps = 1e-6;
  for (int64_t i = 0; i < a.numel(); ++i) {
    auto plus = a.detach().clone(), minus = a.detach().clone();
    plus.view(-1)[i] += eps;
    minus.view(-1)[i] -= eps;
    numeric.view(-1)[i] = (f(plus).item<double>() - f(minus).item<double>()) / (2 * eps);
  }
  BOOST_TEST(torch::allclose(a.grad(), numeric, 1e-6, 1e-7));
}

// A state written at step 0 with no decay is read unchanged at every later step (long memory),
// and a decay of exp(-1) per step shrinks it by that factor each step.
BOOST_AUTO_TEST_CASE(ssd_scan_carries_the_state_by_its_decays) {
  const int64_t T = 9;
  auto x = torch::zeros({1, T, 1, 1}), B = torch::zeros({1, T, 1, 1}),
       C = torch::ones({1, T, 1, 1});
  x.index_put_({0, 0}, 2.0);
  B.index_put_({0, 0}, 1.0);
  for (double log_decay : {0.0, -1.0}) {
    auto y = induct::nn::ssd_scan(x, torch::full({1, T, 1}, log_decay), B, C, 4).flatten();
    auto expected = 2.0 * torch::exp(log_decay * torch::arange(T, torch::kFloat));
    BOOST_TEST(torch::allclose(y, expected, 1e-6, 1e-7), "log decay " << log_decay);
  }
  BOOST_CHECK_THROW(induct::nn::ssd_scan(x, torch::zeros({1, T, 2}), B, C, 4), c10::Error);
  BOOST_CHECK_THROW(induct::nn::ssd_scan(torch::zeros({1, T, 3, 1}), torch::zeros({1, T, 3}),
                                         torch::zeros({1, T, 2, 1}), torch::zeros({1, T, 2, 1}), 4),
                    c10::Error);  // 2 groups do not divide 3 heads
  BOOST_CHECK_THROW(induct::nn::ssd_scan(x, torch::zeros({1, T, 1}), B, C, 0), c10::Error);
}

// The fused depthwise causal convolution (float) against its LibTorch reference in double:
// with and without SiLU and bias, and with fewer steps than taps (every tap reaches before t = 0).
BOOST_AUTO_TEST_CASE(fused_causal_conv_matches_the_reference) {
  for (int64_t T : {2, 11})
    for (bool silu : {false, true})
      for (bool with_bias : {false, true}) {
        torch::manual_seed(T + 2 * silu + with_bias);
        const int64_t B = 3, C = 21, K = 4;
        auto opts = torch::TensorOptions().dtype(torch::kDouble);
        const std::vector<torch::Tensor> inputs{
            torch::randn({B, T, C}, opts) * 2, torch::randn({C, K}, opts), torch::randn({C}, opts)};
        auto weights = torch::linspace(-1, 1, B * T * C, opts).reshape({B, T, C});
        auto run = [&](torch::Dtype dtype, bool fused) {
          std::vector<torch::Tensor> in;
          for (const auto& t : inputs) in.push_back(t.to(dtype).clone().requires_grad_(true));
          auto bias = with_bias ? in[2] : torch::Tensor();
          auto y = (fused ? induct::nn::causal_conv1d : induct::nn::causal_conv1d_reference)(
              in[0], in[1], bias, silu);
          (y * weights.to(dtype)).sum().backward();
          std::vector<torch::Tensor> out{y.detach().to(torch::kDouble),
                                         in[0].grad().to(torch::kDouble),
                                         in[1].grad().to(torch::kDouble)};
          if (with_bias) out.push_back(in[2].grad().to(torch::kDouble));
          return out;
        };
        auto reference = run(torch::kDouble, false), fused = run(torch::kFloat, true);
        const char* names[] = {"y", "dx", "dweight", "dbias"};
        for (size_t i = 0; i < fused.size(); ++i)
          BOOST_TEST(torch::allclose(fused[i], reference[i], 1e-5, 1e-5),
                     names[i] << " T=" << T << " silu=" << silu << " bias=" << with_bias);
      }
}

namespace {
using RecurrentLayer = torch::Tensor (*)(const torch::Tensor&, const torch::Tensor&,
                                         const torch::Tensor&, const torch::Tensor&,
                                         const torch::Tensor&);

// A fused recurrent layer (float) against LibTorch's (which the same function takes in double):
// the output and every gradient for fixed upstream weights, H not a multiple of the vector
// width, gate pre-activations from about -10 to 10 at scale 3 (both saturated ends).
void check_recurrent_layer(RecurrentLayer layer, int64_t gates, int64_t T, double scale,
                           uint64_t seed) {
  auto run = [&](torch::Dtype dtype) {
    torch::manual_seed(seed);
    const int64_t B = 3, I = 6, H = 20;
    auto opts = torch::TensorOptions().dtype(torch::kDouble);
    std::vector<torch::Tensor> in{torch::randn({B, T, I}, opts),
                                  torch::randn({gates * H, I}, opts) * scale / 2,
                                  torch::randn({gates * H, H}, opts) * scale / 4,
                                  torch::randn({gates * H}, opts), torch::randn({gates * H}, opts)};
    for (auto& t : in) t = t.to(dtype).requires_grad_(true);
    auto y = layer(in[0], in[1], in[2], in[3], in[4]);
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
    const double size = reference[i].abs().max().item<double>();
    BOOST_TEST(error < 2e-5 * std::max(1.0, size),
               names[i] << " T=" << T << " at scale " << scale << ": max error " << error);
    if (T > 1) BOOST_TEST(size > 0, names[i] << " is zero");
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(fused_lstm_matches_libtorch_forward_and_backward) {
  for (int64_t T : {1, 9})
    for (double scale : {0.5, 3.0}) check_recurrent_layer(induct::nn::lstm_layer, 4, T, scale, 5);
}

BOOST_AUTO_TEST_CASE(fused_gru_matches_libtorch_forward_and_backward) {
  // T = 1 has no recurrent product at all.
  for (int64_t T : {1, 9})
    for (double scale : {0.5, 3.0}) check_recurrent_layer(induct::nn::gru_layer, 3, T, scale, 6);
  BOOST_CHECK_THROW(
      induct::nn::gru_layer(torch::rand({2, 3, 4}), torch::rand({12, 4}), torch::rand({16, 4}),
                            torch::rand({12}), torch::rand({12})),
      c10::Error);
}

// The batched product (float) against torch::matmul in double, forward and both gradients, for
// operands stored as they are, transposed (read as stored) and permuted (copied first).
BOOST_AUTO_TEST_CASE(batched_matmul_matches_matmul_for_every_layout) {
  const int64_t B = 2, H = 3, M = 5, K = 7, N = 4;
  auto opts = torch::TensorOptions().dtype(torch::kDouble);
  torch::manual_seed(8);
  const auto a0 = torch::randn({B, H, M, K}, opts), b0 = torch::randn({B, H, K, N}, opts);
  const auto weights = torch::randn({B, H, M, N}, opts);
  // Each operand as itself (0), as the transpose of a contiguous tensor (1), permuted (2), as
  // per-head views of one [B, rows, H, cols] tensor (3; read in place), as columns narrowed
  // out of a wider tensor (4; not dense: its gradient is a tensor of its own), and as per-head
  // views of a transposed tensor (5).
  const auto shaped = [](const torch::Tensor& x, int layout) {
    if (layout == 1) return x.transpose(-2, -1).contiguous().transpose(-2, -1);
    if (layout == 2) return x.permute({1, 0, 2, 3}).contiguous().permute({1, 0, 2, 3});
    if (layout == 3) return x.transpose(1, 2).contiguous().transpose(1, 2);
    if (layout == 4)
      return torch::cat({x, torch::zeros_like(x)}, -1).narrow(-1, 0, x.size(-1)).detach();
    if (layout == 5) return x.permute({0, 3, 1, 2}).contiguous().permute({0, 2, 3, 1});
    return x.clone();
  };
  for (int la = 0; la < 6; ++la)
    for (int lb = 0; lb < 6; ++lb) {
      auto run = [&](torch::Dtype dtype, bool ours) {
        auto a = shaped(a0.to(dtype), la).requires_grad_(true);
        auto b = shaped(b0.to(dtype), lb).requires_grad_(true);
        auto c = ours ? induct::nn::batched_matmul(a, b) : torch::matmul(a, b);
        (c * weights.to(dtype)).sum().backward();
        return std::vector<torch::Tensor>{c.detach().to(torch::kDouble),
                                          a.grad().to(torch::kDouble), b.grad().to(torch::kDouble)};
      };
      const auto ours = run(torch::kFloat, true), reference = run(torch::kDouble, false);
      const char* names[] = {"c", "da", "db"};
      for (size_t i = 0; i < 3; ++i)
        BOOST_TEST(torch::allclose(ours[i], reference[i], 1e-5, 1e-5),
                   names[i] << " layouts " << la << ", " << lb);
    }
  BOOST_CHECK_THROW(induct::nn::batched_matmul(torch::zeros({2, 3, 4}), torch::zeros({2, 5, 4})),
                    c10::Error);
  // Broadcasting leading dimensions: torch::matmul's result.
  const auto x = torch::randn({2, 3, 4}), y = torch::randn({4, 5});
  BOOST_TEST(torch::allclose(induct::nn::batched_matmul(x, y), torch::matmul(x, y)));
}

// Block-diagonal projections against an einsum in double, forward and both gradients: blocks
// of 4 x 4 (the vectorised pass) and of 3 x 5 (batched products), rows split over two threads.
BOOST_AUTO_TEST_CASE(block_diagonal_linear_matches_an_einsum) {
  for (const auto& [H, out, in] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{37, 4, 4}, {3, 4, 4}, {5, 3, 5}}) {
    torch::manual_seed(H * 10 + in);
    auto opts = torch::TensorOptions().dtype(torch::kDouble);
    const auto x0 = torch::randn({3, 70, H * in}, opts), w0 = torch::randn({H, out, in}, opts);
    const auto weights = torch::randn({3, 70, H * out}, opts);
    auto run = [&](bool ours, int threads) {
      at::set_num_threads(threads);
      const auto dtype = ours ? torch::kFloat : torch::kDouble;
      auto x = x0.to(dtype).clone().requires_grad_(true);
      auto w = w0.to(dtype).clone().requires_grad_(true);
      auto y = ours ? induct::nn::block_diagonal_linear(x, w)
                    : torch::einsum("bthi,hoi->btho", {x.view({3, 70, H, in}), w})
                          .reshape({3, 70, H * out});
      (y * weights.to(dtype)).sum().backward();
      at::set_num_threads(1);
      return std::vector<torch::Tensor>{y.detach().to(torch::kDouble), x.grad().to(torch::kDouble),
                                        w.grad().to(torch::kDouble)};
    };
    const auto reference = run(false, 1);
    for (int threads : {1, 2}) {
      const auto ours = run(true, threads);
      const char* names[] = {"y", "dx", "dw"};
      for (size_t i = 0; i < 3; ++i)
        BOOST_TEST(
            torch::allclose(ours[i], reference[i], 1e-5, 1e-4),
            names[i] << " blocks " << H << " x " << out << " x " << in << ", threads " << threads);
    }
  }
  BOOST_CHECK_THROW(
      induct::nn::block_diagonal_linear(torch::zeros({2, 9}), torch::zeros({2, 4, 4})), c10::Error);
}

// The fused sLSTM recurrence (float) against the autograd reference in double: the output and
// both gradients, heads wider and narrower than a vector, one step (no recurrent product), and
// pre-activations up to about +-12 (saturated gates; the stabilizer switching between its two
// arguments).
BOOST_AUTO_TEST_CASE(fused_slstm_matches_the_reference_forward_and_backward) {
  // With and without the bias; pre as a contiguous tensor and as a permuted view (the kernel
  // reads it through its strides).
  for (const auto& [T, H, D, scale, with_bias] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, double, bool>>{{1, 2, 5, 1.0, false},
                                                                        {9, 2, 5, 1.0, true},
                                                                        {9, 3, 20, 4.0, false},
                                                                        {13, 1, 7, 0.3, true}}) {
    torch::manual_seed(T * 100 + D);
    const int64_t B = 3;
    auto opts = torch::TensorOptions().dtype(torch::kDouble);
    const std::vector<torch::Tensor> inputs{torch::randn({B, T, 4, H, D}, opts) * scale,
                                            torch::randn({4, H, D, D}, opts) * scale / 2,
                                            torch::randn({4, H, D}, opts) * scale};
    auto run = [&](torch::Dtype dtype, bool fused) {
      std::vector<torch::Tensor> in;
      for (const auto& t : inputs) in.push_back(t.to(dtype).clone().requires_grad_(true));
      // A permuted view when with_bias: [B, T, 4, H, D] over [T, H, B, 4, D] memory.
      const auto pre =
          with_bias ? in[0].permute({1, 3, 0, 2, 4}).contiguous().permute({2, 0, 3, 1, 4}) : in[0];
      const auto bias = with_bias ? in[2] : torch::Tensor();
      auto y = (fused ? induct::nn::slstm_recurrence : induct::nn::slstm_recurrence_reference)(
          pre, in[1], bias);
      auto weights = torch::linspace(-1, 1, y.numel(), opts).reshape(y.sizes()).to(dtype);
      (y * weights).sum().backward();
      std::vector<torch::Tensor> out{y.detach().to(torch::kDouble), in[0].grad().to(torch::kDouble),
                                     in[1].grad().to(torch::kDouble)};
      if (with_bias) out.push_back(in[2].grad().to(torch::kDouble));
      return out;
    };
    const auto reference = run(torch::kDouble, false), fused = run(torch::kFloat, true),
               reference_float = run(torch::kFloat, false);
    const char* names[] = {"h", "dpre", "drecurrent", "dbias"};
    for (size_t i = 0; i < fused.size(); ++i) {
      const double error = (fused[i] - reference[i]).abs().max().item<double>();
      const double size = reference[i].abs().max().item<double>();
      // Saturated gates make float32 itself lose digits (the reference in float32 is off by
      // 3.7e-5 of dpre's size at D = 20): the fused kernel may be off by 4 times that much.
      const double float_error = (reference_float[i] - reference[i]).abs().max().item<double>();
      BOOST_TEST(error < std::max(2e-5 * std::max(1.0, size), 4 * float_error),
                 names[i] << " T=" << T << " H=" << H << " D=" << D << ": max error " << error
                          << " (the reference in float32: " << float_error << ")");
      if (T > 1) BOOST_TEST(size > 0, names[i] << " is zero");
    }
  }
  BOOST_CHECK_THROW(
      induct::nn::slstm_recurrence(torch::zeros({1, 2, 4, 2, 3}), torch::zeros({4, 2, 3, 2})),
      c10::Error);
  BOOST_CHECK_THROW(induct::nn::slstm_recurrence(torch::zeros({1, 2, 4, 2, 3}),
                                                 torch::zeros({4, 2, 3, 3}), torch::zeros({4, 3})),
                    c10::Error);
}

namespace {
// Output and gradients of q, k, v for fixed upstream weights. q, k and v are strided views of
// one [B, T, 3, H, D] tensor, as the attention block makes them.
std::vector<torch::Tensor> attention_run(torch::Dtype dtype, bool fused, double dropout,
                                         int64_t T = 7, int64_t D = 5) {
  torch::manual_seed(3);
  const int64_t B = 2, H = 3;
  auto qkv = (torch::randn({B, T, 3, H, D}, torch::kDouble) * 2).to(dtype).requires_grad_(true);
  auto parts = qkv.permute({2, 0, 3, 1, 4}).unbind(0);
  torch::manual_seed(4);  // the dropout draws
  auto y = induct::nn::causal_attention(parts[0], parts[1], parts[2], dropout, true, fused);
  auto weights = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
  (y * weights).sum().backward();
  return {y.detach().to(torch::kDouble), qkv.grad().to(torch::kDouble)};
}
}  // namespace

BOOST_AUTO_TEST_CASE(fused_attention_matches_libtorch_operations) {
  // In double both paths draw dropout masks from LibTorch's generator alike: equal to rounding.
  for (double dropout : {0.0, 0.3}) {
    auto fused = attention_run(torch::kDouble, true, dropout);
    auto ops = attention_run(torch::kDouble, false, dropout);
    BOOST_TEST(torch::allclose(fused[0], ops[0], 1e-10, 1e-12), "y, dropout " << dropout);
    BOOST_TEST(torch::allclose(fused[1], ops[1], 1e-10, 1e-12), "dqkv, dropout " << dropout);
  }
  // The float kernel (vectorised exp) against double.
  auto f = attention_run(torch::kFloat, true, 0.0), d = attention_run(torch::kDouble, false, 0.0);
  BOOST_TEST((f[0] - d[0]).abs().max().item<double>() < 1e-5);
  BOOST_TEST((f[1] - d[1]).abs().max().item<double>() < 1e-5);
  // Dropout in float: a seed fixes the mask; about 30% of the weights dropped changes y.
  auto f1 = attention_run(torch::kFloat, true, 0.3), f2 = attention_run(torch::kFloat, true, 0.3);
  BOOST_TEST(torch::equal(f1[0], f2[0]));
  BOOST_TEST(!torch::allclose(f1[0], f[0], 1e-3, 1e-3));
  // Sizes past one vector (16 floats, 8 doubles) and past one block of rows, in both dimensions.
  for (auto [T, D] : {std::pair<int64_t, int64_t>{37, 20}, {16, 32}, {1, 3}}) {
    auto fd = attention_run(torch::kDouble, true, 0.2, T, D),
         od = attention_run(torch::kDouble, false, 0.2, T, D);
    BOOST_TEST(torch::allclose(fd[0], od[0], 1e-10, 1e-12), "y, T " << T << " D " << D);
    BOOST_TEST(torch::allclose(fd[1], od[1], 1e-10, 1e-12), "dqkv, T " << T << " D " << D);
    auto ff = attention_run(torch::kFloat, true, 0.0, T, D),
         df = attention_run(torch::kDouble, false, 0.0, T, D);
    BOOST_TEST((ff[0] - df[0]).abs().max().item<double>() < 1e-5, "T " << T << " D " << D);
    BOOST_TEST((ff[1] - df[1]).abs().max().item<double>() < 1e-5, "T " << T << " D " << D);
  }
}

namespace {
// causal_attention_qkv on a [B, T, 3 * H * D] tensor with rotary on rd features (0: none), or
// its reference: the split into q, k and v, apply_rotary and causal_attention as LibTorch ops.
std::vector<torch::Tensor> qkv_attention_run(torch::Dtype dtype, bool packed, double dropout,
                                             int64_t T, int64_t D, int64_t rd) {
  torch::manual_seed(3);
  const int64_t B = 2, H = 3;
  auto qkv = (torch::randn({B, T, 3 * H * D}, torch::kDouble) * 2).to(dtype).requires_grad_(true);
  auto tables = induct::nn::rotary_tables(rd > 0 ? rd : 2, T + 3, 10000);
  torch::manual_seed(4);  // the dropout draws
  torch::Tensor y;
  if (packed) {
    y = rd > 0 ? induct::nn::causal_attention_qkv(qkv, H, dropout, true, tables.cos, tables.sin)
               : induct::nn::causal_attention_qkv(qkv, H, dropout, true);
  } else {
    auto parts = qkv.view({B, T, 3, H, D}).permute({2, 0, 3, 1, 4}).unbind(0);
    auto q = parts[0], k = parts[1];
    if (rd > 0) {
      q = induct::nn::apply_rotary(q.to(torch::kDouble), tables.cos, tables.sin).to(dtype);
      k = induct::nn::apply_rotary(k.to(torch::kDouble), tables.cos, tables.sin).to(dtype);
    }
    y = induct::nn::causal_attention(q, k, parts[2], dropout, true, false);
  }
  auto weights = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
  (y * weights).sum().backward();
  return {y.detach().to(torch::kDouble), qkv.grad().to(torch::kDouble)};
}
}  // namespace

BOOST_AUTO_TEST_CASE(fused_qkv_attention_with_rotary_matches_libtorch_operations) {
  // The kernel rotates q and k on their way in and their gradients on the way out, and writes
  // one gradient for the fused projection's output. In double (LibTorch's dropout draws in both
  // paths) equal to rounding; in float against double. No rotary, partial and full rotary;
  // sizes within and past one vector and one block of rows.
  struct Case {
    int64_t T, D, rd;
  };
  for (auto c : {Case{7, 8, 0}, Case{7, 8, 4}, Case{7, 8, 8}, Case{37, 20, 8}, Case{37, 20, 20},
                 Case{1, 4, 2}}) {
    for (double dropout : {0.0, 0.3}) {
      auto fused = qkv_attention_run(torch::kDouble, true, dropout, c.T, c.D, c.rd);
      auto ops = qkv_attention_run(torch::kDouble, false, dropout, c.T, c.D, c.rd);
      BOOST_TEST(torch::allclose(fused[0], ops[0], 1e-10, 1e-12),
                 "y, T " << c.T << " D " << c.D << " rd " << c.rd << " dropout " << dropout);
      BOOST_TEST(torch::allclose(fused[1], ops[1], 1e-10, 1e-12),
                 "dqkv, T " << c.T << " D " << c.D << " rd " << c.rd << " dropout " << dropout);
    }
    auto f = qkv_attention_run(torch::kFloat, true, 0.0, c.T, c.D, c.rd);
    auto d = qkv_attention_run(torch::kDouble, false, 0.0, c.T, c.D, c.rd);
    BOOST_TEST((f[0] - d[0]).abs().max().item<double>() < 1e-5,
               "float y, T " << c.T << " rd " << c.rd);
    BOOST_TEST((f[1] - d[1]).abs().max().item<double>() < 1e-5,
               "float dqkv, T " << c.T << " rd " << c.rd);
  }
  // Bad shapes are errors, not crashes.
  auto qkv = torch::randn({2, 5, 3 * 2 * 4});
  BOOST_CHECK_THROW(induct::nn::causal_attention_qkv(qkv, 5, 0.0, false), c10::Error);
  auto short_tables = induct::nn::rotary_tables(4, 3, 10000);
  BOOST_CHECK_THROW(
      induct::nn::causal_attention_qkv(qkv, 2, 0.0, false, short_tables.cos, short_tables.sin),
      c10::Error);
}

BOOST_AUTO_TEST_CASE(fused_rotary_matches_libtorch_operations) {
  // Double takes LibTorch's operations, float the fused kernel; partial and full rotation, on a
  // strided view as the attention block passes it.
  for (int64_t rd : {4, 8}) {
    auto tables = induct::nn::rotary_tables(rd, 16, 10000);
    auto run = [&](torch::Dtype dtype) {
      torch::manual_seed(8);
      auto base = torch::randn({2, 7, 3, 8}, torch::kDouble).to(dtype).requires_grad_(true);
      auto y = induct::nn::apply_rotary(base.permute({0, 2, 1, 3}), tables.cos, tables.sin);
      auto w = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
      (y * w).sum().backward();
      return std::vector<torch::Tensor>{y.detach().to(torch::kDouble),
                                        base.grad().to(torch::kDouble)};
    };
    auto f = run(torch::kFloat), d = run(torch::kDouble);
    BOOST_TEST((f[0] - d[0]).abs().max().item<double>() < 1e-6, "rotary_dim " << rd);
    BOOST_TEST((f[1] - d[1]).abs().max().item<double>() < 1e-6, "rotary_dim " << rd);
  }
}

BOOST_AUTO_TEST_CASE(linear_matches_libtorch) {
  // oneDNN's products in float against LibTorch's in double, with and without bias, on a
  // [B, T, in] input, alone and followed by GELU (linear_gelu: tanh and exact); and the fallback
  // (double) equal to LibTorch's operations.
  for (int activation : {0, 1, 2}) {  // none, GELU (tanh), GELU (exact)
    for (bool with_bias : {true, false}) {
      torch::manual_seed(5);
      auto x = torch::randn({3, 7, 5}, torch::kDouble), w = torch::randn({19, 5}, torch::kDouble);
      auto b = with_bias ? torch::randn({19}, torch::kDouble) : torch::Tensor();
      auto run = [&](torch::Dtype dtype, bool sdk) {
        auto xi = x.to(dtype).clone().requires_grad_(true),
             wi = w.to(dtype).clone().requires_grad_(true);
        auto bi = with_bias ? b.to(dtype).clone().requires_grad_(true) : torch::Tensor();
        torch::Tensor y;
        if (activation == 0)
          y = sdk ? induct::nn::linear(xi, wi, bi) : torch::linear(xi, wi, bi);
        else if (sdk)
          y = induct::nn::linear_gelu(xi, wi, bi, activation == 2);
        else
          y = activation == 2 ? torch::gelu(torch::linear(xi, wi, bi))
                              : torch::gelu(torch::linear(xi, wi, bi), "tanh");
        auto g = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
        (y * g).sum().backward();
        std::vector<torch::Tensor> out{y.detach(), xi.grad(), wi.grad()};
        if (with_bias) out.push_back(bi.grad());
        for (auto& t : out) t = t.to(torch::kDouble).clone();
        return out;
      };
      auto f = run(torch::kFloat, true), d = run(torch::kDouble, false),
           dd = run(torch::kDouble, true);
      BOOST_TEST(f[0].sizes() == torch::IntArrayRef({3, 7, 19}));
      for (size_t i = 0; i < f.size(); ++i) {
        const double error = (f[i] - d[i]).abs().max().item<double>();
        BOOST_TEST(error < 1e-5, "output " << i << " activation " << activation << " bias "
                                           << with_bias << ": " << error);
        BOOST_TEST(torch::equal(dd[i], d[i]),
                   "fallback output " << i << " activation " << activation);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(fused_gelu_matches_libtorch) {
  auto x = torch::linspace(-12, 12, 20001, torch::kDouble);
  for (bool exact : {false, true}) {
    auto xf = x.to(torch::kFloat).requires_grad_(true);
    auto xd = x.clone().requires_grad_(true);
    auto yf = exact ? induct::nn::gelu(xf) : induct::nn::gelu_tanh(xf);
    auto yd = exact ? torch::gelu(xd) : torch::gelu(xd, "tanh");
    auto w = torch::linspace(-1, 1, x.numel(), torch::kDouble);
    (yf * w.to(torch::kFloat)).sum().backward();
    (yd * w).sum().backward();
    BOOST_TEST((yf.detach().to(torch::kDouble) - yd.detach()).abs().max().item<double>() < 2e-6,
               exact);
    BOOST_TEST((xf.grad().to(torch::kDouble) - xd.grad()).abs().max().item<double>() < 2e-6, exact);
  }
}

BOOST_AUTO_TEST_CASE(fused_swiglu_and_rms_norm_match_libtorch_operations) {
  // Double takes LibTorch's operations, float the fused kernels: forward and every gradient.
  auto run = [](torch::Dtype dtype) {
    torch::manual_seed(12);
    auto opts = torch::TensorOptions().dtype(torch::kDouble);
    std::vector<torch::Tensor> in{torch::randn({5, 3, 24}, opts) * 3,
                                  torch::randn({5, 3, 24}, opts), torch::randn({24}, opts)};
    for (auto& t : in) t = t.to(dtype).requires_grad_(true);
    auto y = induct::nn::rms_norm(induct::nn::swiglu(in[0], in[1]), in[2], 1e-5);
    auto w = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
    (y * w).sum().backward();
    std::vector<torch::Tensor> out{y.detach().to(torch::kDouble)};
    for (auto& t : in) out.push_back(t.grad().to(torch::kDouble));
    return out;
  };
  auto f = run(torch::kFloat), d = run(torch::kDouble);
  const char* names[] = {"y", "dgate", "dup", "dweight"};
  for (size_t i = 0; i < f.size(); ++i) {
    const double error = ((f[i] - d[i]).abs() / (d[i].abs() + 1)).max().item<double>();
    BOOST_TEST(error < 1e-5, names[i] << ": " << error);
  }
}

BOOST_AUTO_TEST_CASE(fused_layer_norm_matches_libtorch) {
  // The fused float kernel against LibTorch's layer_norm in double: output and the gradients of
  // x, weight and bias; rows of 64 features (a whole number of vectors) and of 37. The fallback
  // (double) is LibTorch's own.
  for (int64_t n : {64, 37}) {
    auto run = [&](torch::Dtype dtype, bool sdk) {
      torch::manual_seed(13);
      auto opts = torch::TensorOptions().dtype(torch::kDouble);
      std::vector<torch::Tensor> in{torch::randn({5, 3, n}, opts) * 3 + 1, torch::randn({n}, opts),
                                    torch::randn({n}, opts)};
      for (auto& t : in) t = t.to(dtype).requires_grad_(true);
      auto y = sdk ? induct::nn::layer_norm(in[0], in[1], in[2], 1e-5)
                   : torch::layer_norm(in[0], {n}, in[1], in[2], 1e-5);
      auto w = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
      (y * w).sum().backward();
      std::vector<torch::Tensor> out{y.detach().to(torch::kDouble)};
      for (auto& t : in) out.push_back(t.grad().to(torch::kDouble));
      return out;
    };
    auto f = run(torch::kFloat, true), d = run(torch::kDouble, false),
         dd = run(torch::kDouble, true);
    const char* names[] = {"y", "dx", "dweight", "dbias"};
    for (size_t i = 0; i < f.size(); ++i) {
      const double error = ((f[i] - d[i]).abs() / (d[i].abs() + 1)).max().item<double>();
      BOOST_TEST(error < 1e-5, names[i] << " n " << n << ": " << error);
      BOOST_TEST(torch::equal(dd[i], d[i]), "fallback " << names[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(fused_head_norm_matches_group_norm) {
  // LayerNorms per head (and one over the whole row, heads 1), with a bias and without, the
  // fused float kernel against LibTorch's group_norm in double over rows: output and every
  // gradient; heads of 16 features and of 7.
  for (const auto& [heads, D, with_bias] : std::vector<std::tuple<int64_t, int64_t, bool>>{
           {4, 16, false}, {3, 7, true}, {1, 37, false}}) {
    const int64_t n = heads * D;
    auto run = [&](torch::Dtype dtype, bool sdk) {
      torch::manual_seed(14);
      auto opts = torch::TensorOptions().dtype(torch::kDouble);
      std::vector<torch::Tensor> in{torch::randn({5, 3, n}, opts) * 3 + 1, torch::randn({n}, opts)};
      if (with_bias) in.push_back(torch::randn({n}, opts));
      for (auto& t : in) t = t.to(dtype).requires_grad_(true);
      const auto bias = with_bias ? in[2] : torch::Tensor();
      auto y = sdk ? induct::nn::head_norm(in[0], heads, in[1], bias, 1e-5)
                   : torch::group_norm(in[0].reshape({-1, n}), heads, in[1], bias, 1e-5)
                         .reshape(in[0].sizes());
      auto w = torch::linspace(-1, 1, y.numel(), torch::kDouble).reshape(y.sizes()).to(dtype);
      (y * w).sum().backward();
      std::vector<torch::Tensor> out{y.detach().to(torch::kDouble)};
      for (auto& t : in) out.push_back(t.grad().to(torch::kDouble));
      return out;
    };
    auto f = run(torch::kFloat, true), d = run(torch::kDouble, false);
    const char* names[] = {"y", "dx", "dweight", "dbias"};
    for (size_t i = 0; i < f.size(); ++i) {
      const double error = ((f[i] - d[i]).abs() / (d[i].abs() + 1)).max().item<double>();
      BOOST_TEST(error < 1e-5, names[i] << " heads " << heads << " D " << D << ": " << error);
    }
  }
  BOOST_CHECK_THROW(induct::nn::head_norm(torch::zeros({2, 9}), 2, torch::ones({9}), {}, 1e-5),
                    c10::Error);
}

BOOST_AUTO_TEST_CASE(fused_layer_norm_pair_matches_two_libtorch_layer_norms) {
  // Two norms of one x (shared statistics, one backward pass) against two LibTorch layer_norms
  // in double: both outputs and the gradients of x and of both affine maps; the fallback
  // (double) is two separate norms.
  for (int64_t n : {64, 37}) {
    auto run = [&](torch::Dtype dtype, bool sdk) {
      torch::manual_seed(14);
      auto opts = torch::TensorOptions().dtype(torch::kDouble);
      std::vector<torch::Tensor> in{torch::randn({5, 3, n}, opts) * 3 + 1, torch::randn({n}, opts),
                                    torch::randn({n}, opts), torch::randn({n}, opts),
                                    torch::randn({n}, opts)};
      for (auto& t : in) t = t.to(dtype).requires_grad_(true);
      torch::Tensor y1, y2;
      if (sdk) {
        std::tie(y1, y2) = induct::nn::layer_norm_pair(in[0], in[1], in[2], in[3], in[4], 1e-5);
      } else {
        y1 = torch::layer_norm(in[0], {n}, in[1], in[2], 1e-5);
        y2 = torch::layer_norm(in[0], {n}, in[3], in[4], 1e-5);
      }
      auto w1 = torch::linspace(-1, 1, y1.numel(), torch::kDouble).reshape(y1.sizes()).to(dtype);
      auto w2 = torch::linspace(2, -0.5, y2.numel(), torch::kDouble).reshape(y2.sizes()).to(dtype);
      ((y1 * w1).sum() + (y2 * w2 * w2).sum()).backward();
      std::vector<torch::Tensor> out{y1.detach().to(torch::kDouble),
                                     y2.detach().to(torch::kDouble)};
      for (auto& t : in) out.push_back(t.grad().to(torch::kDouble));
      return out;
    };
    auto f = run(torch::kFloat, true), d = run(torch::kDouble, false),
         dd = run(torch::kDouble, true);
    const char* names[] = {"y1", "y2", "dx", "dweight1", "dbias1", "dweight2", "dbias2"};
    for (size_t i = 0; i < f.size(); ++i) {
      const double error = ((f[i] - d[i]).abs() / (d[i].abs() + 1)).max().item<double>();
      BOOST_TEST(error < 1e-5, names[i] << " n " << n << ": " << error);
      BOOST_TEST(torch::allclose(dd[i], d[i], 1e-12, 1e-12), "fallback " << names[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(fused_dropout_keeps_one_minus_p_and_is_seeded) {
  const double p = 0.3;
  auto x = torch::ones({1000, 1000}).requires_grad_(true);
  torch::manual_seed(9);
  auto y = induct::nn::dropout(x, p, true);
  const double kept = (y != 0).to(torch::kDouble).mean().item<double>();
  BOOST_TEST(std::abs(kept - (1 - p)) < 0.002, "kept " << kept);
  // Kept elements are scaled by 1 / (1 - p); the gradient is the same mask.
  BOOST_TEST(torch::allclose(y.max(), torch::tensor(1 / (1 - p), torch::kFloat)));
  y.sum().backward();
  BOOST_TEST(torch::equal(x.grad(), y.detach()));
  // The same seed, the same mask; another seed, another one. No dropout in evaluation.
  torch::manual_seed(9);
  BOOST_TEST(torch::equal(induct::nn::dropout(x, p, true), y));
  BOOST_TEST(!torch::equal(induct::nn::dropout(x, p, true), y));
  BOOST_TEST(torch::equal(induct::nn::dropout(x, p, false), x));
  // Neighbouring elements are not correlated (a counter-based hash, not a weak stream).
  auto kept_mask = (y.detach() != 0).to(torch::kDouble).flatten();
  auto a = kept_mask.slice(0, 0, -1) - kept_mask.mean(),
       b = kept_mask.slice(0, 1) - kept_mask.mean();
  const double correlation = ((a * b).mean() / (a * a).mean()).item<double>();
  BOOST_TEST(std::abs(correlation) < 0.005, "correlation " << correlation);
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

BOOST_AUTO_TEST_CASE(fused_cross_entropy_matches_libtorch) {
  // 37 rows of 13 classes (not a multiple of the vector width), some rows ignored, some logits
  // large (the row maximum keeps exp finite); LibTorch's in double is the reference.
  torch::manual_seed(8);
  auto logits = torch::randn({37, 13}, torch::kDouble) * 3;
  logits[5] += 80;
  auto targets = torch::randint(0, 13, {37}, torch::kLong);
  targets.index_put_({torch::tensor({2, 9, 30})}, -100);
  auto run = [&](bool fused) {
    auto x = (fused ? logits.to(torch::kFloat) : logits.clone()).requires_grad_(true);
    auto loss = fused ? induct::nn::cross_entropy(x, targets)
                      : torch::nn::functional::cross_entropy(
                            x, targets,
                            torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
    (loss * 1.7).backward();
    return std::make_pair(loss.item<double>(), x.grad().to(torch::kDouble));
  };
  auto [fused_loss, fused_grad] = run(true);
  auto [ref_loss, ref_grad] = run(false);
  BOOST_TEST(std::abs(fused_loss - ref_loss) < 1e-5 * ref_loss);
  BOOST_TEST((fused_grad - ref_grad).abs().max().item<double>() < 1e-6);
  BOOST_TEST(fused_grad[2].abs().sum().item<double>() == 0);  // an ignored row
  // Every row ignored: NaN, as LibTorch's mean.
  auto all_ignored = torch::full({4}, -100, torch::kLong);
  BOOST_TEST(
      std::isnan(induct::nn::cross_entropy(torch::randn({4, 3}), all_ignored).item<double>()));
}
