// Conformance of every SDK recurrence with the upstream project's own reference function
// (tests/reference/upstream_kernels.py transcribes them: flash-linear-attention's naive delta
// rule, gated delta rule and gated delta product, mamba_ssm's selective_scan_ref and
// ssd_minimal_discrete, xlstm's vanilla sLSTM and parallel mLSTM, torch's own nn.LSTM and
// nn.GRU), forward and every gradient, in float32 and float64, on inputs from the regimes the
// models live in: beta near 0 and near 2, keys drawn from three directions, decays near 0 and
// near 1, large and small step sizes, saturated gates, 256 steps, the chunk sizes the models
// use. Needs Debian's /usr/bin/python3 with python3-torch; without it this test exits 77, which
// ctest reports as skipped (never as passed).
#define BOOST_TEST_MODULE conformance
#include <torch/torch.h>

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>

#include "induct/nn/delta.hpp"
#include "induct/nn/gru.hpp"
#include "induct/nn/lstm.hpp"
#include "induct/nn/mlstm.hpp"
#include "induct/nn/scan.hpp"
#include "induct/nn/slstm.hpp"
#include "induct/nn/ssd.hpp"
#include "support.hpp"
#include "util/process.hpp"

using namespace induct;

namespace {

const std::string kPython = "/usr/bin/python3";
const std::string kChecker =
    std::string(INDUCT_SOURCE_DIR) + "/tests/reference/upstream_kernels.py";

struct Setup {
  Setup() {
    induct::configure_process(1);
    if (test::run_command(kPython + " -c 'import torch, numpy'").exit_code != 0) {
      std::cout << "SKIPPED: " << kPython
                << " cannot import torch and numpy (install python3-torch)\n";
      std::exit(77);
    }
  }
};
BOOST_TEST_GLOBAL_FIXTURE(Setup);

using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;  // named, in order
using Kernel = std::function<torch::Tensor(const std::map<std::string, torch::Tensor>&)>;

struct Case {
  std::string regime;
  Tensors inputs;  // float64; each one cast to the run's type and differentiated
  std::map<std::string, int64_t> options;  // passed on to the reference (a chunk, n)
  Kernel kernel;
};

void write_raw(const std::string& path, const torch::Tensor& t) {
  auto c = t.detach().to(torch::kDouble).contiguous();
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

// Runs each case in float32 and float64 into its own folder, then the checker over them all.
void check(const std::string& kernel, const std::vector<Case>& cases) {
  const std::string dir = test::temp_dir("conformance-" + kernel);
  int index = 0;
  for (const auto& c : cases) {
    for (auto dtype : {torch::kFloat, torch::kDouble}) {
      const std::string folder = dir + "/case" + std::to_string(index++);
      test::run_command("mkdir -p '" + folder + "'");
      std::map<std::string, torch::Tensor> leaves;
      for (const auto& [name, t] : c.inputs)
        leaves[name] = t.detach().to(dtype).clone().requires_grad_(true);
      const auto out = c.kernel(leaves);
      torch::manual_seed(7);
      const auto weights = torch::randn(out.sizes(), out.options()).detach();
      (out * weights).sum().backward();
      std::ofstream text(folder + "/case.txt");
      text << "kernel=" << kernel << "\nregime=" << c.regime
           << "\ndtype=" << (dtype == torch::kFloat ? "float32" : "float64") << "\nout=";
      for (int64_t i = 0; i < out.dim(); ++i) text << (i ? "," : "") << out.size(i);
      text << "\n";
      for (const auto& [key, value] : c.options) text << key << "=" << value << "\n";
      for (const auto& [name, t] : c.inputs) {
        text << "tensor " << name;
        for (int64_t s : t.sizes()) text << " " << s;
        text << "\n";
        const auto& leaf = leaves[name];
        write_raw(folder + "/" + name + ".bin", leaf);
        BOOST_REQUIRE_MESSAGE(leaf.grad().defined(), kernel << ": no gradient for " << name);
        write_raw(folder + "/grad." + name + ".bin", leaf.grad());
      }
      write_raw(folder + "/out.bin", out);
      write_raw(folder + "/weights.bin", weights);
    }
  }
  auto result = test::run_command(kPython + " " + kChecker + " " + dir);
  BOOST_TEST_MESSAGE(result.output);
  BOOST_TEST((result.exit_code == 0 && result.output.find("\nok\n") != std::string::npos),
             kernel << " against its upstream reference:\n"
                    << result.output);
  if (result.exit_code == 0) test::run_command("rm -rf '" + dir + "'");
}

torch::TensorOptions f64() { return torch::TensorOptions().dtype(torch::kDouble); }

torch::Tensor unit_rows(torch::Tensor x) { return x / x.norm(2, -1, true); }

// Keys drawn from three fixed unit directions (a head tracking S_3 uses them so).
torch::Tensor three_directions(int64_t B, int64_t H, int64_t T, int64_t D) {
  const auto directions = unit_rows(torch::randn({3, D}, f64()));
  return directions.index({torch::randint(0, 3, {B, H, T}, torch::kLong)});
}

// beta near 0 or near 2, at random per step.
torch::Tensor beta_near_0_or_2(int64_t B, int64_t H, int64_t T) {
  const auto near2 = torch::rand({B, H, T}, f64()) < 0.5;
  const auto offset = 0.05 * torch::rand({B, H, T}, f64());
  return torch::where(near2, 2.0 - offset, offset);
}

}  // namespace

BOOST_AUTO_TEST_CASE(delta_rule_matches_flash_linear_attention_naive_recurrence) {
  torch::manual_seed(1);
  const int64_t B = 2, H = 2, T = 256;
  std::vector<Case> cases;
  for (int64_t chunk : {16, 32, 64}) {
    const auto kernel = [chunk](const std::map<std::string, torch::Tensor>& t) {
      return induct::nn::delta_rule(t.at("q"), t.at("k"), t.at("v"), t.at("beta"), {}, chunk);
    };
    cases.push_back(
        {"beta in [1.9, 2], keys from 3 directions (d_k 4), chunk " + std::to_string(chunk),
         {{"q", unit_rows(torch::randn({B, H, T, 4}, f64()))},
          {"k", three_directions(B, H, T, 4)},
          {"v", torch::randn({B, H, T, 3}, f64())},
          {"beta", 1.9 + 0.1 * torch::rand({B, H, T}, f64())}},
         {},
         kernel});
    cases.push_back({"beta near 0 or 2, random keys (d_k 16), chunk " + std::to_string(chunk),
                     {{"q", unit_rows(torch::randn({B, H, T, 16}, f64()))},
                      {"k", unit_rows(torch::randn({B, H, T, 16}, f64()))},
                      {"v", torch::randn({B, H, T, 8}, f64())},
                      {"beta", beta_near_0_or_2(B, H, T)}},
                     {},
                     kernel});
  }
  check("delta", cases);
}

BOOST_AUTO_TEST_CASE(gated_delta_rule_matches_flash_linear_attention_naive_recurrence) {
  torch::manual_seed(2);
  const int64_t B = 2, H = 2, T = 256;
  std::vector<Case> cases;
  struct Decay {
    std::string name;
    torch::Tensor log_decay;
  };
  const std::vector<Decay> decays = {
      {"decays near 1", -1e-3 * torch::rand({B, H, T}, f64())},
      {"decays near 0", -5.0 - 5.0 * torch::rand({B, H, T}, f64())},
      {"decays near 0 or 1",
       torch::where(torch::rand({B, H, T}, f64()) < 0.5, -1e-3 * torch::ones({B, H, T}, f64()),
                    -8.0 * torch::ones({B, H, T}, f64()))}};
  for (const auto& decay : decays)
    for (int64_t chunk : {16, 64}) {
      cases.push_back({decay.name + ", beta in [1.9, 2], keys from 3 directions, chunk " +
                           std::to_string(chunk),
                       {{"q", unit_rows(torch::randn({B, H, T, 4}, f64()))},
                        {"k", three_directions(B, H, T, 4)},
                        {"v", torch::randn({B, H, T, 3}, f64())},
                        {"beta", 1.9 + 0.1 * torch::rand({B, H, T}, f64())},
                        {"log_decay", decay.log_decay}},
                       {},
                       [chunk](const std::map<std::string, torch::Tensor>& t) {
                         return induct::nn::delta_rule(t.at("q"), t.at("k"), t.at("v"),
                                                       t.at("beta"), t.at("log_decay"), chunk);
                       }});
    }
  check("gated_delta", cases);
}

BOOST_AUTO_TEST_CASE(delta_product_matches_flash_linear_attention_naive_recurrence) {
  torch::manual_seed(3);
  const int64_t B = 2, H = 2, T = 128;
  std::vector<Case> cases;
  for (int64_t n : {2, 3})
    for (bool gated : {false, true}) {
      Tensors inputs = {{"q", unit_rows(torch::randn({B, H, T, 4}, f64()))},
                        {"k", three_directions(B, H, T * n, 4)},
                        {"v", torch::randn({B, H, T * n, 3}, f64())},
                        {"beta", beta_near_0_or_2(B, H, T * n)}};
      if (gated) inputs.emplace_back("log_decay", -0.1 * torch::rand({B, H, T}, f64()));
      const int64_t chunk = 16 * n;  // as the deltanet plugin
      cases.push_back(
          {"householder " + std::to_string(n) + (gated ? ", gated" : "") +
               ", beta near 0 or 2, keys from 3 directions, chunk " + std::to_string(chunk),
           inputs,
           {{"householder", n}},
           [n, chunk, gated](const std::map<std::string, torch::Tensor>& t) {
             return induct::nn::delta_product(t.at("q"), t.at("k"), t.at("v"), t.at("beta"),
                                              gated ? t.at("log_decay") : torch::Tensor(), n,
                                              chunk);
           }});
    }
  check("delta_product", cases);
}

BOOST_AUTO_TEST_CASE(selective_scan_matches_mamba_selective_scan_ref) {
  torch::manual_seed(4);
  const int64_t B = 2, T = 256, Di = 4;
  std::vector<Case> cases;
  struct Regime {
    std::string name;
    int64_t N;
    double dt_center, z_scale;
  };
  // Raw step sizes through softplus with the bias: about 5 (decays exp(5 A) near 0), about
  // 5e-5 (decays near 1), and mixed; z scaled so that the SiLU gate saturates.
  for (const auto& r : {Regime{"large dt (about 5), 16 states", 16, 5.0, 1.0},
                        Regime{"small dt (about 5e-5), 64 states", 64, -10.0, 1.0},
                        Regime{"mixed dt, saturated z gate, 64 states", 64, 0.0, 10.0}}) {
    cases.push_back({r.name,
                     {{"x", torch::randn({B, T, Di}, f64())},
                      {"delta", r.dt_center + 3.0 * torch::randn({B, T, Di}, f64())},
                      {"A", -torch::linspace(1, 16, r.N, f64()).repeat({Di, 1})},
                      {"Bm", torch::randn({B, T, r.N}, f64())},
                      {"C", torch::randn({B, T, r.N}, f64())},
                      {"D", torch::randn({Di}, f64())},
                      {"z", r.z_scale * torch::randn({B, T, Di}, f64())},
                      {"delta_bias", 0.1 * torch::randn({Di}, f64())}},
                     {},
                     [](const std::map<std::string, torch::Tensor>& t) {
                       induct::nn::ScanOptions options;
                       options.delta_bias = t.at("delta_bias");
                       options.delta_softplus = true;
                       options.z = t.at("z");
                       return induct::nn::selective_scan(t.at("x"), t.at("delta"), t.at("A"),
                                                         t.at("Bm"), t.at("C"), t.at("D"), options);
                     }});
  }
  check("selective_scan", cases);
}

BOOST_AUTO_TEST_CASE(ssd_scan_matches_mamba_ssd_minimal_discrete) {
  torch::manual_seed(5);
  const int64_t B = 2, T = 256, H = 4, P = 4, G = 2, N = 8;
  std::vector<Case> cases;
  struct Regime {
    std::string name;
    torch::Tensor a;
    int64_t chunk;
  };
  for (const auto& r :
       {Regime{"decays near 1, chunk 16", -1e-3 * torch::rand({B, T, H}, f64()), 16},
        Regime{"decays near 0, chunk 32", -5.0 - 5.0 * torch::rand({B, T, H}, f64()), 32},
        Regime{
            "decays near 0 or 1, chunk 64",
            torch::where(torch::rand({B, T, H}, f64()) < 0.5, -1e-3 * torch::ones({B, T, H}, f64()),
                         -8.0 * torch::ones({B, T, H}, f64())),
            64}}) {
    const int64_t chunk = r.chunk;
    cases.push_back({r.name,
                     {{"x", torch::randn({B, T, H, P}, f64())},
                      {"a", r.a},
                      {"Bm", torch::randn({B, T, G, N}, f64())},
                      {"C", torch::randn({B, T, G, N}, f64())}},
                     {{"block", 32}},
                     [chunk](const std::map<std::string, torch::Tensor>& t) {
                       return induct::nn::ssd_scan(t.at("x"), t.at("a"), t.at("Bm"), t.at("C"),
                                                   chunk);
                     }});
  }
  check("ssd", cases);
}

BOOST_AUTO_TEST_CASE(slstm_matches_xlstm_vanilla_cell) {
  torch::manual_seed(6);
  const int64_t B = 2, T = 256, H = 2, D = 4;
  std::vector<Case> cases;
  const auto gate_shift = [&](double i, double f) {  // added to the i~ and f~ pre-activations
    auto shift = torch::zeros({1, 1, 4, 1, 1}, f64());
    shift.index_put_({0, 0, 0, 0, 0}, i);
    shift.index_put_({0, 0, 1, 0, 0}, f);
    return shift;
  };
  struct Regime {
    std::string name;
    double scale, i, f;
  };
  for (const auto& r :
       {Regime{"saturated gates (pre-activations x 8)", 8.0, 0.0, 0.0},
        Regime{"large input gates (i~ + 20), forget near 1 (f~ + 10)", 1.0, 20.0, 10.0},
        Regime{"forget near 0 (f~ - 10)", 1.0, 0.0, -10.0}}) {
    cases.push_back(
        {r.name,
         {{"pre", r.scale * torch::randn({B, T, 4, H, D}, f64()) + gate_shift(r.i, r.f)},
          {"recurrent", 0.5 * torch::randn({4, H, D, D}, f64())},
          {"bias", torch::randn({4, H, D}, f64())}},
         {},
         [](const std::map<std::string, torch::Tensor>& t) {
           return induct::nn::slstm_recurrence(t.at("pre"), t.at("recurrent"), t.at("bias"));
         }});
  }
  check("slstm", cases);
}

BOOST_AUTO_TEST_CASE(mlstm_matches_xlstm_parallel_stabilized_simple) {
  torch::manual_seed(7);
  const int64_t B = 2, H = 2, T = 256, D = 8;
  std::vector<Case> cases;
  struct Regime {
    std::string name;
    double i, f;
  };
  for (const auto& r :
       {Regime{"large input gates (i~ + 10), forget near 1 (f~ + 10)", 10.0, 10.0},
        Regime{"forget near 0 (f~ - 10)", 0.0, -10.0}, Regime{"moderate gates", 0.0, 2.0}}) {
    cases.push_back({r.name,
                     {{"q", torch::randn({B, H, T, D}, f64())},
                      {"k", torch::randn({B, H, T, D}, f64())},
                      {"v", torch::randn({B, H, T, D}, f64())},
                      {"igate", r.i + 2.0 * torch::randn({B, H, T, 1}, f64())},
                      {"fgate", r.f + 2.0 * torch::randn({B, H, T, 1}, f64())}},
                     {},
                     [](const std::map<std::string, torch::Tensor>& t) {
                       return induct::nn::mlstm_parallel(t.at("q"), t.at("k"), t.at("v"),
                                                         t.at("igate"), t.at("fgate"));
                     }});
  }
  check("mlstm", cases);
}

// The fused float32 kernels against torch's own nn.LSTM and nn.GRU (in float64 the SDK calls
// LibTorch's, so that half checks the transcription only).
BOOST_AUTO_TEST_CASE(lstm_and_gru_layers_match_torch_nn) {
  torch::manual_seed(8);
  const int64_t B = 2, T = 256, I = 4, Hd = 8;
  for (const std::string kernel : {"lstm", "gru"}) {
    const int64_t gates = kernel == "lstm" ? 4 : 3;
    std::vector<Case> cases;
    for (double scale : {0.3, 4.0}) {
      cases.push_back(
          {scale > 1 ? "saturated gates (weights x 4)" : "moderate weights",
           {{"x", torch::randn({B, T, I}, f64())},
            {"w_ih", scale * torch::randn({gates * Hd, I}, f64())},
            {"w_hh", scale * torch::randn({gates * Hd, Hd}, f64()) / std::sqrt(double(Hd))},
            {"b_ih", torch::randn({gates * Hd}, f64())},
            {"b_hh", torch::randn({gates * Hd}, f64())}},
           {},
           [kernel](const std::map<std::string, torch::Tensor>& t) {
             const auto layer = kernel == "lstm" ? induct::nn::lstm_layer : induct::nn::gru_layer;
             return layer(t.at("x"), t.at("w_ih"), t.at("w_hh"), t.at("b_ih"), t.at("b_hh"));
           }});
    }
    check(kernel, cases);
  }
}
