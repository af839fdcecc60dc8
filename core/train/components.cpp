#include "train/components.hpp"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include <filesystem>
#include <sstream>

#include "data/language.hpp"
#include "options_yaml.hpp"
#include "train/archive_file.hpp"
#include "train/measurement.hpp"

namespace induct {

std::string shape_string(const at::IntArrayRef& sizes) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << "]";
  return out.str();
}

// One batch: row 0 fixed tokens, each further row the same with one later position p
// changed; the logits of row p before p must equal row 0's. Tokens come from a fixed local
// sequence, so no random number generator is touched. In eval mode (no dropout).
void check_causal(SequenceModel& model, const ModelShape& shape, torch::Device device,
                  const std::string& who) {
  const int64_t T = std::min<int64_t>(shape.max_length, kCausalCheckLength);
  const int64_t V = shape.vocab_size;
  if (T < 2 || V < 2) return;
  std::vector<int64_t> positions;  // the changed positions: all, or 32 spread over 1..T-1
  const int64_t count = std::min<int64_t>(T - 1, 32);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t p = 1 + (count == 1 ? 0 : k * (T - 2) / (count - 1));
    if (positions.empty() || positions.back() != p) positions.push_back(p);
  }
  std::vector<int64_t> base(static_cast<size_t>(T));
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (auto& token : base) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    token = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(V));
  }
  std::vector<int64_t> rows(base);
  for (int64_t p : positions) {
    std::vector<int64_t> row = base;
    row[static_cast<size_t>(p)] = (row[static_cast<size_t>(p)] + 1) % V;
    rows.insert(rows.end(), row.begin(), row.end());
  }
  const auto batch = static_cast<int64_t>(positions.size() + 1);
  torch::Tensor tokens = torch::tensor(rows, torch::kLong).view({batch, T}).to(device);
  torch::NoGradGuard no_grad;
  const bool training = model.is_training();
  model.eval();
  torch::Tensor logits;
  try {
    logits = model.forward(tokens).to(torch::kCPU, torch::kDouble);
  } catch (const std::exception& e) {
    throw PluginError(who + ": forward on a [" + std::to_string(batch) + ", " + std::to_string(T) +
                      "] batch (the causality check) failed: " + e.what());
  }
  model.train(training);
  const double tolerance = 1e-4 * (1 + logits[0].abs().max().item<double>());
  for (size_t k = 0; k < positions.size(); ++k) {
    const int64_t p = positions[k];
    torch::Tensor diff =
        (logits[static_cast<int64_t>(k) + 1].narrow(0, 0, p) - logits[0].narrow(0, 0, p))
            .abs()
            .amax(1);
    const double largest = diff.max().item<double>();
    if (largest <= tolerance) continue;
    const int64_t t = (diff > tolerance).nonzero()[0][0].item<int64_t>();
    std::ostringstream message;
    message << who << ": not causal: its logits at position " << t
            << " change when only the token at position " << p << " changes (largest difference "
            << largest << "); a model's output at t may depend on the tokens up to t only";
    throw PluginError(message.str());
  }
}

std::string model_who(const PluginRegistry& registry, const std::string& name) {
  const ComponentInfo* info = registry.find("model", name);
  return "model '" + name + "' (" + (info ? info->library : "?") + ")";
}

std::shared_ptr<Task> make_task_checked(const PluginRegistry& registry, const Options& section) {
  const auto name = section.require<std::string>("name");
  auto task = registry.make_task(name, TaskContext{section});
  section.reject_unknown_keys("task '" + name + "'");
  return task;
}

std::string checkpoint_path(const std::string& checkpoint_dir, const std::string& key) {
  return (std::filesystem::path(checkpoint_dir) / (key + ".pt")).string();
}

void save_checkpoint(SequenceModel& model, const std::string& path) {
  namespace fs = std::filesystem;
  fs::create_directories(fs::path(path).parent_path());
  torch::serialize::OutputArchive archive;
  model.save(archive);
  write_archive_file(archive, path);
}

void load_checkpoint(SequenceModel& model, const std::string& path) {
  if (!std::filesystem::exists(path)) throw ConfigError(path + ": no such checkpoint");
  try {
    torch::serialize::InputArchive archive;
    read_archive_file(archive, path);
    model.load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(path + ": not a checkpoint of this model (" +
                             e.what_without_backtrace() +
                             "); delete it and rerun to train the configuration again");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": not a usable checkpoint (" + std::string(e.what()) +
                             "); delete it and rerun to train the configuration again");
  }
}

std::shared_ptr<SequenceModel> make_model_checked(const PluginRegistry& registry,
                                                  const Options& section, const ModelShape& shape,
                                                  uint64_t seed, torch::Device device) {
  const auto name = section.require<std::string>("name");
  ModelContext ctx;
  ctx.vocab_size = shape.vocab_size;
  ctx.max_length = shape.max_length;
  ctx.pad_token = shape.pad;
  ctx.device = device;
  ctx.seed = seed;
  ctx.options = section;
  torch::manual_seed(seed);
  std::shared_ptr<SequenceModel> model;
  try {
    model = registry.make_model(name, ctx);
  } catch (const PluginError& e) {
    // Out of memory while building: the sizes the study asked for, not the plugin, are wrong.
    const std::string message = e.what();
    if (message.find("alloc") == std::string::npos) throw;
    // torch appends its C++ backtrace after the first line.
    throw ConfigError(
        section.where("name") + ": model " + yaml::flow(yaml::raw(section)) +
        " does not fit in memory (lower its sizes): " + message.substr(0, message.find('\n')));
  }
  section.reject_unknown_keys("model '" + name + "'");
  const std::string who = model_who(registry, name);
  try {
    model->to(device);
    // A forward pass in eval mode draws no random numbers, so this check leaves the
    // training run exactly as it would be without it.
    torch::NoGradGuard no_grad;
    model->eval();
    auto tokens = torch::full({2, shape.max_length}, shape.pad, torch::kLong).to(device);
    torch::Tensor logits = model->forward(tokens);
    model->train();
    const std::vector<int64_t> expected{2, shape.max_length, shape.vocab_size};
    if (logits.sizes().vec() != expected)
      throw PluginError(who + ": forward returned logits of shape " + shape_string(logits.sizes()) +
                        ", expected " + shape_string(expected) + " ([batch, time, vocabulary])");
    if (!logits.is_floating_point())
      throw PluginError(who + ": forward returned non-floating logits");
  } catch (const PluginError&) {
    throw;
  } catch (const std::exception& e) {
    throw PluginError(who + ": forward on a [2, " + std::to_string(shape.max_length) +
                      "] batch failed: " + e.what());
  }
  return model;
}

CellData make_cell_data(const std::shared_ptr<Task>& task, const std::string& task_name,
                        const std::string& format, const std::string& distribution, int L,
                        const ValidationPolicy& validation, uint64_t n_cap) {
  CellData cell;
  cell.task = task;
  cell.transitions = std::make_shared<Transitions>(task, task_name);
  cell.vocab.actions = cell.transitions->num_actions();
  cell.vocab.states = cell.transitions->num_states();
  cell.format = &format_named(format);
  cell.data.num_actions = cell.vocab.actions;
  cell.data.language = Language::of(*cell.transitions, L, task_name);
  cell.data.distribution = &distribution_named(distribution);
  cell.data.L = L;
  cell.data.validation = validation;
  cell.data.n_cap = n_cap;
  return cell;
}

CellData make_cell_data(const PluginRegistry& registry, const Cell& cell) {
  auto task = make_task_checked(registry, yaml::from_node(cell.task, "<trial task>"));
  return make_cell_data(task, cell.task_name(), cell.format, cell.distribution, cell.L,
                        cell.validation, cell.n_cap);
}

double plateau_loss(const CellData& cell, const ExampleSet& validation,
                    TrainSettings::PlateauLevel level) {
  if (level == TrainSettings::PlateauLevel::kValidation) return chance_loss({&validation});
  const uint64_t n = std::min(plan_data(cell.data).n_max, kPlateauSample);
  const Split split = make_split(cell.data, n, derive_seed(0, {kPlateau}));
  ExampleSet train(split.train, *cell.transitions, *cell.format, cell.vocab);
  ExampleSet held(split.validation, *cell.transitions, *cell.format, cell.vocab);
  return chance_loss({&train, &held});
}

TrialResult run_trial(const TrialSpec& spec, const PluginRegistry& registry,
                      TrainObserver* observer, SplitCache* cache,
                      const Measurements* measurements) {
  CellData cell = make_cell_data(registry, spec.cell);
  Split split =
      cache ? cache->get(cell.data, spec.n, spec.seed) : make_split(cell.data, spec.n, spec.seed);
  ExampleSet train(split.train, *cell.transitions, *cell.format, cell.vocab);
  ExampleSet validation(split.validation, *cell.transitions, *cell.format, cell.vocab);
  const torch::Device device(spec.device);
  auto model =
      make_model_checked(registry, yaml::from_node(spec.cell.model, "<trial model>"),
                         {cell.vocab.size(), spec.max_length, cell.vocab.pad()}, spec.seed, device);
  TrainData data{train, validation, cell.vocab.pad(),
                 cell.data.distribution->ascending_batches() && spec.training.curriculum};
  if (spec.training.stall_window > 0)
    data.chance_loss =
        plateau_loss(cell, validation.size() > 0 ? validation : train, spec.training.plateau_level);
  StateFile state;
  if (!spec.state_dir.empty()) {
    state.path = spec.state_path();
    state.trajectory = spec.trajectory_key();
    state.every = spec.state_every;
    state.keep_final = spec.keep_states == "failed";
    state.keep_stopped = spec.keep_states == "failed" || spec.keep_states == "stopped";
  }
  TrialResult result = train_model(*model, data, spec.training, spec.lr, spec.seed, device,
                                   observer, spec.state_dir.empty() ? nullptr : &state);
  if (result.status == TrialStatus::kCancelled) return result;
  const YAML::Node asked = spec.measurements.clone();
  if (asked.size() > 0) {
    model->eval();
    const MeasureContext context{*model, cell, spec, device};
    for (const auto& entry : asked) {
      const std::string name = entry.first.as<std::string>();
      const Measurement measure = measurements ? measurements->find(name) : nullptr;
      if (!measure) throw std::logic_error("trial asks for an unknown measurement '" + name + "'");
      result.measurements.set(name, measure(context, entry.second));
    }
  }
  if (!spec.checkpoint_dir.empty())
    save_checkpoint(*model, checkpoint_path(spec.checkpoint_dir, spec.key()));
  return result;
}

}  // namespace induct
