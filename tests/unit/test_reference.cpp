// Numerical reference: every in-tree model's logits against an independent plain PyTorch
// implementation (bench/reference/models.py) given the same weights, to 1e-5 relative error.
// Needs Debian's /usr/bin/python3 with python3-torch; without it this test exits 77, which
// ctest reports as skipped (never as passed).
#define BOOST_TEST_MODULE reference
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "options_yaml.hpp"
#include "support.hpp"
#include "train/cell_setup.hpp"
#include "util/process.hpp"

using namespace induct;
namespace bdata = boost::unit_test::data;

namespace {

const std::string kPython = "/usr/bin/python3";
const std::string kChecker = std::string(INDUCT_SOURCE_DIR) + "/bench/reference/check_logits.py";

struct Setup {
  Setup() {
    configure_process(1);
    if (test::run_command(kPython + " -c 'import torch, numpy'").exit_code != 0) {
      std::cout << "SKIPPED: " << kPython
                << " cannot import torch and numpy (install python3-torch)\n";
      std::exit(77);
    }
  }
};
BOOST_TEST_GLOBAL_FIXTURE(Setup);

// The paper's sizes (docs/method.md section 8).
const std::vector<std::string> kModels = {
    "{name: lstm, hidden: 256}",
    "{name: lstm, hidden: 64, layers: 2}",
    "{name: gru}",
    "{name: gru, hidden: 64, layers: 2}",
    "{name: gpt2}",
    "{name: llama}",
    "{name: pythia}",
    "{name: dense_ssm}",
    "{name: dense_ssm, hidden: 64, rank: 16, normalize: false}",
    "{name: dense_ssm, hidden: 64, block: 16}",
    "{name: dense_ssm, hidden: 64, block: 1, normalize: false}",
    "{name: mamba}",
    "{name: mamba2}",
    // Three chunks of the SSD scan over the 10 tokens, two groups of B and C.
    "{name: mamba2, layers: 2, d_model: 64, headdim: 16, d_state: 16, ngroups: 2, chunk_size: 4, "
    "tie_embeddings: false}",
    "{name: deltanet, layers: 2}",
    // Heads of 16: the plugin's step-by-step path (wider heads run chunked).
    "{name: deltanet, layers: 1, d_model: 32, heads: 2, d_ff: 64, negative_eigenvalues: true}",
    "{name: deltanet, layers: 2, d_model: 64, heads: 2, d_ff: 128, householder: 2, "
    "negative_eigenvalues: true, gate: true}",
    "{name: hybrid}",
    "{name: hybrid, pattern: M2A2, d_model: 64, tie_embeddings: false, attention: {heads: 2, "
    "d_ff: 96}, mamba: {d_state: 8, dt_rank: 4}, mamba2: {headdim: 16, d_state: 16, chunk_size: "
    "4}}",
    "{name: xlstm}",
    "{name: xlstm, blocks: sms, d_model: 32, heads: 2, d_conv: 3, d_ff: 48}",
    "{name: looped}",
    "{name: looped, block: M, loops: 3, inject: true, d_model: 64, mamba: {d_state: 8}}",
};

void write_raw(const std::string& path, const torch::Tensor& t) {
  auto c = t.contiguous();
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

}  // namespace

// Every registered model has a PyTorch reference above (a model without one is a test that
// fails here until its reference is written, not a model left unchecked).
BOOST_AUTO_TEST_CASE(every_registered_model_has_a_reference) {
  for (const std::string& name : test::registered_models()) {
    BOOST_TEST(test::configures(kModels, name),
               name << " has no configuration compared with a PyTorch reference");
  }
}

BOOST_DATA_TEST_CASE(logits_match_the_pytorch_reference, bdata::make(kModels), yaml_text) {
  const int64_t V = 12, T = 10, B = 2;
  Options options = yaml::from_node(YAML::Load(yaml_text), "model.yaml");
  auto model = make_model_checked(test::plugins(), options, {V, T, V - 2}, 42, torch::kCPU);
  model->eval();
  torch::manual_seed(1);
  {
    // A parameter that starts at zero (xLSTM's recurrent and gate weights) would leave its path
    // unchecked: such parameters are drawn afresh.
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.eq(0).all().item<bool>()) p.normal_(0.0, 0.3);
  }
  torch::Tensor tokens = torch::randint(0, V - 2, {B, T}, torch::kLong);
  torch::Tensor logits;
  {
    torch::NoGradGuard no_grad;
    logits = model->forward(tokens).to(torch::kFloat);
  }
  const std::string name = options.get<std::string>("name", "");
  const std::string dir = test::temp_dir("reference-" + name + std::to_string(yaml_text.size()));
  {
    std::ofstream config(dir + "/config.txt");
    config << "model=" << name << "\nvocab=" << V << "\nmax_length=" << T << "\nbatch=" << B
           << "\n";
    for (const auto& entry : yaml::resolved(options))
      if (entry.first.as<std::string>() != "name")
        config << entry.first.as<std::string>() << "="
               << (entry.second.IsMap() ? yaml::flow(entry.second) : entry.second.as<std::string>())
               << "\n";
    std::ofstream params(dir + "/params.txt");
    int index = 0;
    for (const auto& p : model->named_parameters()) {
      std::string file = "p";  // (not "p" + string: GCC 12's -Wrestrict misfires on it in C++20)
      file += std::to_string(index++);
      file += ".bin";
      write_raw(dir + "/" + file, p.value().detach().to(torch::kFloat));
      params << p.key() << " " << file;
      for (int64_t s : p.value().sizes()) params << " " << s;
      params << "\n";
    }
  }
  write_raw(dir + "/tokens.bin", tokens);
  write_raw(dir + "/logits.bin", logits);
  auto result = test::run_command(kPython + " " + kChecker + " " + dir);
  BOOST_TEST_MESSAGE(result.output);
  BOOST_TEST(result.exit_code == 0, yaml_text << ": " << result.output);
  BOOST_TEST(result.output.find("ok") != std::string::npos, result.output);
  test::run_command("rm -rf '" + dir + "'");
}
