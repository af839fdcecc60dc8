// Training-step throughput of the in-tree models, and the machine's float32 GEMM peak.
//
//   induct_bench [--models lstm,gpt2,...] [--lengths 10,30,62] [--batch 64] [--seconds 3]
//                [--small] [--threads 1] [--device cpu|cuda] [--read-every-step]
//                [--peak-only] [--trace FILE] [--start-at UNIX_SECONDS [--gap 3]]
//
// A step is what induct's trainer does: forward on random tokens [batch, T] of Z_5's
// vocabulary (12), cross-entropy on every position, backward, Adam (induct's FlatAdam), the
// loss kept on the device and read every 100 steps (the trainer reads it at each evaluation;
// --read-every-step reads it after every step instead, which on a GPU waits for the step to
// finish, for comparison). The clock stops after the last read. Prints one line per
// (model, length): steps/s, the step's FLOPs counted from the model's matrix products
// (forward x 3 for forward + backward), and achieved GFLOP/s. bench/run_bench.sh alternates
// this with the PyTorch reference and prints the table of docs/performance.md. With --trace,
// 20 more steps of the last (model, length) run under LibTorch's profiler, written to FILE as a
// Chrome trace; bench/trace_summary.py totals it by operation. With --start-at, the i-th
// (model, length) is measured in a fixed window of wall-clock time, so that several processes
// started together (trainings sharing a device, as `run.workers` does) measure at the same time
// and their steps/s add up to the device's aggregate; a process that is still warming up when
// its window opens measures what is left of it and prints how late it was.
#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <induct/nn/linear.hpp>
#include <induct/nn/loss.hpp>
#include <iostream>
#include <sstream>
#include <thread>

#include "options_yaml.hpp"
#include "plugin/registry.hpp"
#include "train/cell_setup.hpp"
#include "train/optimizer.hpp"
#include "train/trial.hpp"
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

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// GFLOP/s of a large float32 matmul (1280x256 by 256x1024, as measured in the notes), the
// faster of LibTorch's matmul (OpenBLAS) and the SDK's linear (oneDNN's sgemm, which the SDK's
// blocks use), half the budget each.
double gemm_peak(double budget) {
  torch::NoGradGuard no_grad;
  auto a = torch::randn({1280, 256}), b = torch::randn({256, 1024});
  auto bt = b.t().contiguous();  // linear's weight: [out, in]
  auto rate = [&](const std::function<torch::Tensor()>& product) {
    torch::Tensor c;
    for (int i = 0; i < 5; ++i) c = product();
    int64_t runs = 0;
    auto start = std::chrono::steady_clock::now();
    while (seconds_since(start) < budget / 2) {
      c = product();
      ++runs;
    }
    return 2.0 * 1280 * 256 * 1024 * runs / seconds_since(start) / 1e9;
  };
  return std::max(rate([&] { return torch::matmul(a, b); }),
                  rate([&] { return induct::nn::linear(a, bt); }));
}

// Forward FLOPs of one batch from the model's matrix products (and the scan for Mamba);
// a training step is counted as 3x forward.
double forward_flops(const std::string& kind, const YAML::Node& m, double B, double T, double V) {
  auto get = [&](const char* key) { return m[key].as<double>(); };
  if (kind == "lstm") {
    const double H = get("hidden");
    return 2 * B * T * (4 * H * 2 * H + H * V);
  }
  if (kind == "gru") {
    const double H = get("hidden"), layers = get("layers");
    return 2 * B * T * (layers * 3 * H * 2 * H + H * V);
  }
  if (kind == "gpt2" || kind == "llama" || kind == "pythia") {
    const double d = get("d_model"), ff = get("d_ff"), layers = get("layers");
    const double mlp = kind == "llama" ? 3 * d * ff : 2 * d * ff;
    const double per_layer = 2 * B * T * (4 * d * d + mlp) + 2 * 2 * B * T * T * d;  // + QK^T, AV
    return layers * per_layer + 2 * B * T * d * V;
  }
  if (kind == "dense_ssm") {
    const double H = get("hidden"), E = get("embed"), R = get("rank");
    if (R > 0) return 2 * B * T * (E * R + 2 * H * R) + 2 * B * T * H * V;
    const double per_step = V <= 32 ? 2 * B * H * V * H : 2 * B * H * H;
    return 2 * H * H * E * V + T * per_step + 2 * B * T * H * V;
  }
  if (kind == "mamba") {
    const double d = get("d_model"), Di = get("expand") * d, N = get("d_state"), R = get("dt_rank"),
                 K = get("d_conv"), layers = get("layers");
    const double projections = 2 * B * T * (d * 2 * Di + Di * (R + 2 * N) + R * Di + Di * d);
    const double scan = 6 * B * T * Di * N + 2 * K * B * T * Di;  // update, readout, conv
    return layers * (projections + scan) + 2 * B * T * d * V;
  }
  if (kind == "mamba2") {
    const double d = get("d_model"), Di = get("expand") * d, P = get("headdim"), H = Di / P,
                 N = get("d_state"), G = get("ngroups"), K = get("d_conv"), layers = get("layers");
    const double Q = std::min(get("chunk_size"), T), conv = Di + 2 * G * N;
    const double projections = 2 * B * T * (d * (Di + conv + H) + Di * d);
    // Within a chunk of Q steps: the scores C_i . B_j and their weighted sum of x, per head.
    const double scan = 2 * B * T * Q * H * (N + P) + 2 * K * B * T * conv;
    return layers * (projections + scan) + 2 * B * T * d * V;
  }
  if (kind == "deltanet") {
    const double d = get("d_model"), H = get("heads"), n = get("householder"), ff = get("d_ff"),
                 K = get("d_conv"), layers = get("layers"), Dk = d / H, C = d * (1 + 2 * n),
                 gated = m["gate"].as<bool>() ? 1 : 0;
    const double projections =
        2 * B * T * (d * C + d * H * n + d * d + 3 * d * ff + gated * (d * H + d * d));
    // Per head and step: S^T k and the rank-1 update per Householder step, S^T q once.
    const double recurrence = 2 * B * T * H * Dk * Dk * (2 * n + 1) + 2 * K * B * T * C;
    return layers * (projections + recurrence) + 2 * B * T * d * V;
  }
  if (kind == "xlstm") {
    const double d = get("d_model"), H = get("heads"), K = get("d_conv"), ff = get("d_ff"),
                 I = 2 * d;
    double total = 2 * B * T * d * V;
    for (char block : m["blocks"].as<std::string>()) {
      if (block == 'm')  // projections (q, k, v in 4x4 blocks), the gates, the conv, and the
                         // parallel form's two T x T products per head
        total += 2 * B * T * (d * 2 * I + 3 * 4 * I + 3 * I * H * 2 + I * d) + 2 * K * B * T * I +
                 4 * B * T * T * I;
      else  // input and recurrent block-diagonal gates, the conv, the gated feed-forward block
        total += 2 * B * T * (8 * d * d / H + 3 * d * ff) + 2 * K * B * T * d;
    }
    return total;
  }
  if (kind == "hybrid" || kind == "looped") {
    // Each layer (or loop) as a one-layer model of its kind, less that model's head.
    const std::string layers =
        kind == "hybrid" ? m["pattern"].as<std::string>()
                         : std::string(m["loops"].as<size_t>(), m["block"].as<std::string>()[0]);
    const double d = get("d_model"), head = 2 * B * T * d * V;
    double total = head;
    for (char layer : layers) {
      const char* section = layer == 'A' ? "attention" : layer == 'M' ? "mamba" : "mamba2";
      YAML::Node one = YAML::Clone(m[section]);
      one["d_model"] = m["d_model"];
      one["layers"] = 1;
      total += forward_flops(layer == 'A' ? "llama" : section, one, B, T, V) - head;
    }
    return total;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description options("induct_bench options");
  options.add_options()(
      "models",
      po::value<std::string>()->default_value(
          "lstm,lstm768,gru,gpt2,llama,pythia,dense_ssm,mamba,mamba2,deltanet,xlstm"),
      "models")("lengths", po::value<std::string>()->default_value("10,30,62"),
                "tokens per sequence")("batch", po::value<int64_t>()->default_value(64),
                                       "batch size")(
      "seconds", po::value<double>()->default_value(3.0), "time per measurement")(
      "small", "d_model 64, 2 layers (the sizes a CPU user runs)")(
      "threads", po::value<int>()->default_value(1), "intra-op threads")(
      "device", po::value<std::string>()->default_value("cpu"), "cpu, cuda or cuda:N")(
      "read-every-step", "read the loss on the host after every step")(
      "start-at", po::value<double>(),
      "measure model/length pair i in the window that starts at this Unix time (s) + i * "
      "(seconds + gap): processes started together measure the same windows")(
      "gap", po::value<double>()->default_value(3.0),
      "with --start-at: seconds between windows (each pair's model is built and warmed up in "
      "them)")("peak-only", "only measure the GEMM peak")(
      "trace", po::value<std::string>(), "write a profiler trace of 20 steps to this file")(
      "model", po::value<std::vector<std::string>>(),
      "a model section to measure besides --models (repeatable), named by it in the output, "
      "e.g. '{name: torchscript, file: lstm.pt}'; GFLOP/s only for the in-tree kinds")("help",
                                                                                       "this help");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, options), vm);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  configure_process(vm["threads"].as<int>());
  const torch::Device device(vm["device"].as<std::string>());
  const bool read_every_step = vm.count("read-every-step") > 0;
  const double budget = vm["seconds"].as<double>();
  if (vm.count("peak-only")) {
    std::cout << "gemm_peak_gflops " << gemm_peak(budget) << "\n";
    return 0;
  }
  const bool small = vm.count("small") > 0;
  std::map<std::string, std::string> configs = {
      {"lstm", small ? "{name: lstm, hidden: 64}" : "{name: lstm, hidden: 256}"},
      {"lstm768", "{name: lstm, hidden: 768}"},
      {"gru", small ? "{name: gru, hidden: 64}" : "{name: gru, hidden: 256}"},
      {"gpt2",
       small ? "{name: gpt2, layers: 2, d_model: 64, heads: 4, d_ff: 256}" : "{name: gpt2}"},
      {"llama",
       small ? "{name: llama, layers: 2, d_model: 64, heads: 4, d_ff: 256}" : "{name: llama}"},
      {"pythia",
       small ? "{name: pythia, layers: 2, d_model: 64, heads: 4, d_ff: 256}" : "{name: pythia}"},
      {"dense_ssm", small ? "{name: dense_ssm, hidden: 64}" : "{name: dense_ssm}"},
      {"mamba", small ? "{name: mamba, layers: 2, d_model: 64}" : "{name: mamba}"},
      {"mamba2", small ? "{name: mamba2, layers: 2, d_model: 64}" : "{name: mamba2}"},
      {"deltanet", small ? "{name: deltanet, layers: 2, d_model: 64, heads: 4, d_ff: 256}"
                         : "{name: deltanet}"},
      {"xlstm", small ? "{name: xlstm, blocks: ms, d_model: 64}" : "{name: xlstm}"},
      {"hybrid", small ? "{name: hybrid, pattern: MA, d_model: 64, attention: {d_ff: 256}, mamba: "
                         "{d_state: 16}}"
                       : "{name: hybrid}"},
      {"looped",
       small ? "{name: looped, loops: 2, d_model: 64, attention: {d_ff: 256}}" : "{name: looped}"},
  };
  std::vector<std::string> names = split(vm["models"].as<std::string>());
  if (vm.count("model"))
    for (const auto& section : vm["model"].as<std::vector<std::string>>()) {
      configs[section] = section;
      names.push_back(section);
    }
  PluginRegistry registry;
  registry.load_all(plugin_search_path({}));
  const int64_t batch = vm["batch"].as<int64_t>(), vocab = 12;  // Z_5: 5 + 5 + 2 tokens
  const bool scheduled = vm.count("start-at") > 0;
  const double gap = vm["gap"].as<double>();
  int window = 0;

  for (const auto& name : names) {
    if (!configs.count(name)) {
      std::cerr << "unknown model " << name << "\n";
      return 2;
    }
    for (const auto& length_text : split(vm["lengths"].as<std::string>())) {
      const int64_t T = std::stol(length_text);
      Options section = yaml::from_node(YAML::Load(configs.at(name)), "bench");
      auto model = make_model_checked(registry, section, {vocab, T, vocab - 2}, 1, device);
      const YAML::Node resolved = yaml::resolved(section);
      model->train();
      int64_t parameters = 0;
      for (const auto& p : model->parameters()) parameters += p.numel();
      FlatAdam optimizer(model->parameters(), 1e-4);  // what induct's trainer uses
      auto tokens = torch::randint(0, vocab - 2, {batch, T}, torch::kLong).to(device);
      auto targets = torch::randint(0, vocab, {batch * T}, torch::kLong).to(device);
      std::vector<torch::Tensor> losses;
      double loss_sum = 0;  // read, so that nothing is skipped
      auto read = [&] {
        if (losses.empty()) return;
        loss_sum += torch::stack(losses).to(torch::kCPU, torch::kDouble).sum().item<double>();
        losses.clear();
      };
      auto step = [&] {
        auto logits = model->forward(tokens);
        auto loss = induct::nn::cross_entropy(logits.reshape({batch * T, vocab}), targets);
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        losses.push_back(loss.detach());
        if (read_every_step || losses.size() == 100) read();
      };
      // A device's first steps choose kernels and allocate: warm up past them.
      for (int i = 0; i < (device.is_cpu() ? 2 : 5); ++i) step();
      read();
      double length_s = budget, late_s = 0;
      if (scheduled) {
        const double opens = vm["start-at"].as<double>() + window * (budget + gap);
        const double now = unix_seconds();
        if (now < opens) std::this_thread::sleep_for(std::chrono::duration<double>(opens - now));
        late_s = std::max(0.0, now - opens);
        length_s = std::max(0.0, budget - late_s);
        ++window;
      }
      int64_t steps = 0;
      auto start = std::chrono::steady_clock::now();
      while (seconds_since(start) < length_s || steps < 3) {
        step();
        ++steps;
      }
      read();
      const double rate = steps / seconds_since(start);
      if (!std::isfinite(loss_sum)) std::cerr << "warning: non-finite training loss\n";
      const double flops = 3 * forward_flops(resolved["name"].as<std::string>(), resolved,
                                             double(batch), double(T), double(vocab));
      // A --model section by its label (no spaces: the output is split at them).
      const std::string shown = name.rfind('{', 0) == 0 ? component_label(resolved) : name;
      std::cout << "model " << shown << " params " << parameters << " length " << T
                << " steps_per_s " << rate << " gflops " << flops * rate / 1e9;
      if (scheduled) std::cout << " window " << window - 1 << " late_s " << late_s;
      std::cout << "\n" << std::flush;
      if (vm.count("trace")) {
        torch::autograd::profiler::RecordProfile guard(vm["trace"].as<std::string>());
        for (int i = 0; i < 20; ++i) step();
      }
    }
  }
  return 0;
}
