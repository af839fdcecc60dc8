#include "train/state_file.hpp"

#include <ATen/Context.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "options_yaml.hpp"
#include "train/archive_file.hpp"
#include "train/detector.hpp"
#include "util/process.hpp"

namespace induct {

namespace {

torch::Tensor words_tensor(const std::array<uint64_t, 4>& words) {
  torch::Tensor t = torch::empty({4}, torch::kLong);
  std::memcpy(t.data_ptr<int64_t>(), words.data(), sizeof(words));
  return t;
}

std::array<uint64_t, 4> tensor_words(const torch::Tensor& t) {
  std::array<uint64_t, 4> words{};
  if (t.numel() != 4 || t.scalar_type() != torch::kLong)
    throw std::runtime_error("bad generator state");
  std::memcpy(words.data(), t.contiguous().data_ptr<int64_t>(), sizeof(words));
  return words;
}

std::string read_text(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  archive.read(key, value);
  return value.toStringRef();
}

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t;
}

// torch's default generator of a device (dropout draws from the CPU one), saved and restored.
torch::Tensor generator_state(torch::Device device) {
  at::Generator generator = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_generator_state(torch::Device device, const torch::Tensor& state) {
  at::Generator generator = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

}  // namespace

std::optional<SavedState> read_state(const StateFile& file, SequenceModel& model,
                                     const TrainSettings& settings, double chance,
                                     torch::Device device, bool& unreached) {
  unreached = false;
  if (!std::filesystem::exists(file.path)) return std::nullopt;
  SavedState state;
  try {
    torch::serialize::InputArchive archive;
    read_archive_file(archive, file.path, device);
    if (const std::string held = read_text(archive, "trajectory"); held != file.trajectory) {
      // Moved, copied or swapped by hand: a state of another training is never resumed.
      say_line("induct: " + file.path + ": holds the state of another training (" +
               held.substr(0, held.find('\n')) + "); training from the start");
      return std::nullopt;
    }
    state.result = TrialResult::from_yaml(YAML::Load(read_text(archive, "result")));
    if (state.result.steps <= 0 || state.result.history.empty() ||
        state.result.history.back().step != state.result.steps)
      throw std::runtime_error("no history");
    if (!reaches(state.result.history, chance, settings)) {
      unreached = true;
      return std::nullopt;
    }
    torch::serialize::InputArchive weights;
    archive.read("model", weights);
    model.load(weights);
    state.exp_avg = read_tensor(archive, "exp_avg");
    state.exp_avg_sq = read_tensor(archive, "exp_avg_sq");
    state.adam_steps = read_tensor(archive, "adam_steps").item<int64_t>();
    state.pass_rng = tensor_words(read_tensor(archive, "pass_rng"));
    state.cursor = read_tensor(archive, "cursor").item<int64_t>();
    state.cpu_generator = read_tensor(archive, "cpu_generator");
    if (!device.is_cpu()) state.device_generator = read_tensor(archive, "device_generator");
  } catch (const c10::Error& e) {
    // Another model or LibTorch: train from the start (one line, no backtrace).
    std::string why = e.what_without_backtrace();
    say_line("induct: " + file.path + ": not a usable training state (" +
             why.substr(0, why.find('\n')) + "); training from the start");
    return std::nullopt;
  } catch (const std::exception& e) {
    // Unreadable (damaged, cut short, written by an earlier induct): train from the start.
    say_line("induct: " + file.path + ": not a usable training state (" + e.what() +
             "); training from the start");
    return std::nullopt;
  }
  return state;
}

void write_state(const StateFile& file, SequenceModel& model, const FlatAdam& optimizer,
                 const std::array<uint64_t, 4>& pass_rng, int64_t cursor, const TrialResult& result,
                 torch::Device device, bool& reported) {
  try {
    torch::serialize::OutputArchive archive;
    archive.write("trajectory", c10::IValue(file.trajectory));
    archive.write("result", c10::IValue(yaml::flow(result.to_yaml())));
    torch::serialize::OutputArchive weights;
    model.save(weights);
    archive.write("model", weights);
    archive.write("exp_avg", optimizer.exp_avg());
    archive.write("exp_avg_sq", optimizer.exp_avg_sq());
    archive.write("adam_steps", torch::tensor(optimizer.steps(), torch::kLong));
    archive.write("pass_rng", words_tensor(pass_rng));
    archive.write("cursor", torch::tensor(cursor, torch::kLong));
    archive.write("cpu_generator", generator_state(torch::kCPU));
    if (!device.is_cpu()) archive.write("device_generator", generator_state(device));
    std::filesystem::create_directories(std::filesystem::path(file.path).parent_path());
    write_archive_file(archive, file.path);  // whole or not at all, with a digest
  } catch (const std::exception& e) {
    // A state only saves time: the training goes on without it (and the earlier state, if any).
    if (reported) return;
    reported = true;
    std::string message = e.what();
    message = message.substr(0, message.find('\n'));
    if (message.rfind(file.path + ": ", 0) == 0) message = message.substr(file.path.size() + 2);
    say_line("induct: could not save the training state " + file.path + ": " + message +
             " (the training goes on without it; not said again for this training)");
  }
}

void restore_generators(const SavedState& state, torch::Device device) {
  set_generator_state(torch::kCPU, state.cpu_generator);
  if (!device.is_cpu()) set_generator_state(device, state.device_generator);
}

}  // namespace induct
