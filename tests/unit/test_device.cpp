// Every registered model off the SDK's fused CPU kernels against them: the same seed gives the same
// weights, and the logits, every parameter's gradient and the logits with a hook's activation
// halved agree within float rounding. The other side is INDUCT_TEST_DEVICE: `cuda` (the default;
// LibTorch's CUDA operations, TF32 off) or `cpu` (the CPU in double precision, which takes
// LibTorch's own operations as a GPU does). Without CUDA and with INDUCT_TEST_DEVICE unset this
// test exits 77, which ctest reports as skipped (never as passed). bench/gpu/check.sh runs it on
// the GPU.
#define BOOST_TEST_MODULE device
#include <ATen/Context.h>
#include <torch/cuda.h>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <iostream>

#include "options_yaml.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"
#include "util/process.hpp"

using namespace induct;
namespace bdata = boost::unit_test::data;

namespace {

std::string other_device() {
  const char* asked = std::getenv("INDUCT_TEST_DEVICE");
  return asked != nullptr && *asked != '\0' ? asked : "cuda";
}

struct Setup {
  Setup() {
    configure_process(1);
    const std::string device = other_device();
    if (device != "cpu" && !torch::cuda::is_available()) {
      std::cout << "SKIPPED: this LibTorch sees no CUDA device (INDUCT_TEST_DEVICE=cpu compares "
                   "the CPU's double precision instead)\n";
      std::exit(std::getenv("INDUCT_TEST_DEVICE") == nullptr ? 77 : 1);
    }
    // cuBLAS and cuDNN in full float precision: the comparison is with float rounding.
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
    std::cout << "comparing the CPU's float kernels with " << device << "\n";
  }
};
BOOST_TEST_GLOBAL_FIXTURE(Setup);

// The paper's sizes (docs/method.md section 8) and small, multi-layer and chunked forms.
const std::vector<std::string> kConfigured = {
    "{name: lstm, hidden: 256}",
    "{name: lstm, hidden: 64, layers: 2}",
    "{name: gru, hidden: 64, layers: 2}",
    "{name: gpt2}",
    "{name: gpt2, layers: 2, d_model: 64, heads: 4, d_ff: 256}",
    "{name: llama, layers: 2, d_model: 64, heads: 4, d_ff: 256}",
    "{name: pythia, layers: 2, d_model: 64, heads: 4, d_ff: 256}",
    "{name: dense_ssm}",
    "{name: dense_ssm, hidden: 64, rank: 16, normalize: false}",
    "{name: dense_ssm, hidden: 64, block: 16}",
    "{name: mamba}",
    "{name: mamba, layers: 2, d_model: 64}",
    "{name: mamba2}",
    "{name: mamba2, layers: 2, d_model: 64, headdim: 16, d_state: 16, ngroups: 2, chunk_size: 4}",
    "{name: deltanet, layers: 2}",
    "{name: deltanet, layers: 2, d_model: 64, heads: 2, d_ff: 128, householder: 2, "
    "negative_eigenvalues: true, gate: true}",
    "{name: xlstm}",
    "{name: xlstm, blocks: ms, d_model: 64}",
    "{name: hybrid, pattern: MA2, d_model: 64, attention: {d_ff: 256}, mamba: {d_state: 16}, "
    "mamba2: {headdim: 16, d_state: 16}}",
    "{name: looped, loops: 2, d_model: 64, attention: {d_ff: 256}}",
};

// Those, and every other registered model at its defaults (a new plugin's model is compared
// with no test edited).
std::vector<std::string> every_model() {
  std::vector<std::string> out = kConfigured;
  for (const std::string& name : test::registered_models()) {
    if (!test::configures(kConfigured, name)) out.push_back("{name: " + name + "}");
  }
  return out;
}
const std::vector<std::string> kModels = every_model();

struct Side {
  torch::Tensor logits, patched;
  std::vector<torch::Tensor> grads;
  std::vector<std::string> names;
};

// Logits (eval mode: no dropout, whose masks differ between devices), the gradient of the
// cross-entropy of those logits, and the logits with the first hook after the embedding halved.
Side evaluate(const std::string& yaml_text, torch::Device device, torch::Dtype dtype,
              const torch::Tensor& tokens, const torch::Tensor& targets, int64_t V) {
  const int64_t T = tokens.size(1);
  Options options = yaml::from_node(YAML::Load(yaml_text), "model.yaml");
  auto model = make_model_checked(test::plugins(), options, {V, T, V - 2}, 42, device);
  model->to(dtype);
  model->eval();
  Side side;
  auto logits = model->forward(tokens.to(device));
  auto loss = torch::nll_loss(torch::log_softmax(logits.reshape({-1, V}), 1),
                              targets.to(device).reshape({-1}));
  loss.backward();
  side.logits = logits.detach().to(torch::kCPU, torch::kDouble);
  for (const auto& p : model->named_parameters()) {
    side.names.push_back(p.key());
    side.grads.push_back(p.value().grad().defined()
                             ? p.value().grad().to(torch::kCPU, torch::kDouble)
                             : torch::Tensor());
  }
  std::string first;
  model->hooks.set_handler([&](const std::string& hook, const torch::Tensor& x) {
    if (first.empty() && hook != "embed") first = hook;
    return hook == first ? x * 0.5 : x;
  });
  torch::NoGradGuard no_grad;
  side.patched = model->forward(tokens.to(device)).to(torch::kCPU, torch::kDouble);
  model->hooks.clear();
  return side;
}

// Largest difference relative to the reference's scale.
double relative(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a - b).abs().max().item<double>() / std::max(scale, 1e-6);
}

}  // namespace

BOOST_DATA_TEST_CASE(a_model_computes_the_same_off_the_fused_cpu_kernels, bdata::make(kModels),
                     yaml_text) {
  const int64_t V = 12, T = 10, B = 4;
  torch::manual_seed(1);
  const auto tokens = torch::randint(0, V - 2, {B, T}, torch::kLong);
  const auto targets = torch::randint(0, V, {B, T}, torch::kLong);
  const std::string device = other_device();
  const Side cpu = evaluate(yaml_text, torch::kCPU, torch::kFloat, tokens, targets, V);
  const Side other = evaluate(yaml_text, torch::Device(device),
                              device == "cpu" ? torch::kDouble : torch::kFloat, tokens, targets, V);
  // Float rounding through a few layers: 1e-4 of the scale (a wrong weight, mask or state
  // shows as O(1)).
  BOOST_TEST(relative(other.logits, cpu.logits) < 1e-4, yaml_text << " logits");
  BOOST_TEST(relative(other.patched, cpu.patched) < 1e-4, yaml_text << " patched logits");
  BOOST_TEST(relative(cpu.patched, cpu.logits) > 1e-3, yaml_text << ": the patch changes nothing");
  BOOST_REQUIRE(cpu.grads.size() == other.grads.size());
  double worst = 0;
  for (size_t i = 0; i < cpu.grads.size(); ++i)
    if (cpu.grads[i].defined() && other.grads[i].defined())
      worst = std::max(worst, relative(other.grads[i], cpu.grads[i]));
  std::cout << yaml_text << ": logits " << relative(other.logits, cpu.logits) << ", patched "
            << relative(other.patched, cpu.patched) << ", gradients (worst) " << worst << "\n";
  for (size_t i = 0; i < cpu.grads.size(); ++i) {
    BOOST_REQUIRE_MESSAGE(cpu.grads[i].defined() && other.grads[i].defined(),
                          yaml_text << ": no gradient for " << cpu.names[i]);
    // Gradients sum over the batch and positions: 1e-3 of the scale.
    BOOST_TEST(relative(other.grads[i], cpu.grads[i]) < 1e-3, yaml_text << " " << cpu.names[i]);
  }
}
