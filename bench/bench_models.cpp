// Training-step throughput of the in-tree models, and the machine's float32 GEMM peak.
//
//   induct_bench [--models lstm,gpt2,...] [--lengths 10,30,62] [--batch 64] [--seconds 3]
//               [--small]
//
// One line per (model, length): steps/s of a full training step (forward, cross-entropy on
// every position, backward, Adam), the model's forward FLOPs per step counted from its GEMMs
// by a profiler-free estimate (6 x parameters x tokens for dense layers), and achieved GFLOP/s.
// bench/run_bench.sh runs this and the PyTorch reference alternately and prints one table.
#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>
#include <sstream>

#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include "options_yaml.hpp"
#include "plugin/registry.hpp"
#include "train/components.hpp"
#include "util/process.hpp"

namespace po = boost::program_options;
using namespace induct;

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// GFLOP/s of a large float32 matmul (the same shape the notes measured: 1280x256x1024).
double gemm_peak(double budget) {
  auto a = torch::randn({1280, 256}), b = torch::randn({256, 1024});
  torch::Tensor c;
  for (int i = 0; i < 5; ++i) c = torch::matmul(a, b);
  int64_t runs = 0;
  auto start = std::chrono::steady_clock::now();
  while (seconds_since(start) < budget) {
    c = torch::matmul(a, b);
    ++runs;
  }
  return 2.0 * 1280 * 256 * 1024 * runs / seconds_since(start) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description options("induct_bench options");
  options.add_options()("models", po::value<std::string>()->default_value("lstm,lstm768,gpt2,llama,pythia,dense_ssm,mamba"), "models")(
      "lengths", po::value<std::string>()->default_value("10,30,62"), "sequence lengths (tokens)")(
      "batch", po::value<int64_t>()->default_value(64), "batch size")(
      "seconds", po::value<double>()->default_value(3.0), "time per measurement")(
      "small", "d_model 64, 2 layers (the sizes a CPU user runs)")(
      "threads", po::value<int>()->default_value(1), "intra-op threads")("help", "this help");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  configure_process(vm["threads"].as<int>());
  const bool small = vm.count("small") > 0;
  const std::map<std::string, std::string> configs = {
      {"lstm", small ? "{name: lstm, hidden: 64}" : "{name: lstm, hidden: 256}"},
      {"lstm768", "{name: lstm, hidden: 768}"},
      {"gpt2", small ? "{name: gpt2, layers: 2, d_model: 64, heads: 4, d_ff: 256}" : "{name: gpt2}"},
      {"llama", small ? "{name: llama, layers: 2, d_model: 64, heads: 4, d_ff: 256}" : "{name: llama}"},
      {"pythia", small ? "{name: pythia, layers: 2, d_model: 64, heads: 4, d_ff: 256}" : "{name: pythia}"},
      {"dense_ssm", small ? "{name: dense_ssm, hidden: 64}" : "{name: dense_ssm}"},
      {"mamba", small ? "{name: mamba, layers: 2, d_model: 64}" : "{name: mamba}"},
  };
  PluginRegistry registry;
  registry.load_all(plugin_search_path({}));
  const int64_t batch = vm["batch"].as<int64_t>(), vocab = 12;  // Z_5: 5 + 5 + 2 tokens
  const double budget = vm["seconds"].as<double>();

  std::cout << "gemm_peak_gflops " << gemm_peak(budget) << "\n";
  for (const auto& name : split(vm["models"].as<std::string>())) {
    if (!configs.count(name)) {
      std::cerr << "unknown model " << name << "\n";
      return 2;
    }
    for (const auto& length_text : split(vm["lengths"].as<std::string>())) {
      const int64_t T = std::stol(length_text);
      auto model = make_model_checked(registry, yaml::from_node(YAML::Load(configs.at(name)), "bench"),
                                      {vocab, T, vocab - 2}, 1, torch::kCPU);
      model->train();
      int64_t parameters = 0;
      for (const auto& p : model->parameters()) parameters += p.numel();
      torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-4));
      auto tokens = torch::randint(0, vocab - 2, {batch, T}, torch::kLong);
      auto targets = torch::randint(0, vocab, {batch * T}, torch::kLong);
      auto step = [&] {
        auto logits = model->forward(tokens);
        auto loss = torch::nn::functional::cross_entropy(logits.reshape({batch * T, vocab}), targets);
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        return loss.item<double>();
      };
      for (int i = 0; i < 2; ++i) step();
      int64_t steps = 0;
      auto start = std::chrono::steady_clock::now();
      while (seconds_since(start) < budget || steps < 3) {
        step();
        ++steps;
      }
      const double rate = steps / seconds_since(start);
      // Forward + backward of dense layers: about 6 FLOPs per parameter per token.
      const double gflops = 6.0 * parameters * batch * T * rate / 1e9;
      std::cout << "model " << name << " params " << parameters << " length " << T
                << " steps_per_s " << rate << " gflops_est " << gflops << "\n"
                << std::flush;
    }
  }
  return 0;
}
