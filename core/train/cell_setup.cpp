#include "train/cell_setup.hpp"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include <filesystem>
#include <limits>
#include <sstream>

#include "data/language.hpp"
#include "options_yaml.hpp"
#include "train/archive_file.hpp"
#include "train/evaluation.hpp"
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

std::shared_ptr<const Format> make_format_checked(const PluginRegistry& registry,
                                                  const Options& section) {
  const auto name = section.require<std::string>("name");
  auto format = registry.make_format(name, FormatContext{section});
  section.reject_unknown_keys("format '" + name + "'");
  return format;
}

Options format_section(const YAML::Node& format) {
  if (format.IsMap()) return yaml::from_node(format, "<trial format>");
  YAML::Node named(YAML::NodeType::Map);
  named["name"] = format;
  return yaml::from_node(named, "<trial format>");
}

void check_format(const CellData& cell, int longest, const std::string& who) {
  const Format& format = *cell.format;
  const Vocabulary& vocab = cell.vocab;
  if (format.extra_tokens() < 0 || format.extra_tokens() > 1'000'000)
    throw PluginError(who + ": extra_tokens is " + std::to_string(format.extra_tokens()) +
                      " (0..1000000)");
  std::vector<int> lengths;
  for (int n = 1; n <= std::min(longest, 64); ++n) lengths.push_back(n);
  for (int n : {longest / 2, longest - 1, longest})
    if (n > 64) lengths.push_back(n);
  int64_t previous = 0;
  std::vector<int32_t> actions, states;
  std::vector<int64_t> tokens, targets;
  for (int n : lengths) {
    const auto fail = [&](const std::string& what) {
      throw PluginError(who + ": at " + std::to_string(n) + " action" + (n == 1 ? "" : "s") + ", " +
                        what);
    };
    // A valid sequence: the first allowed action in each state, cycling through the actions.
    actions.assign(static_cast<size_t>(n), 0);
    states.assign(static_cast<size_t>(n), 0);
    int64_t s = cell.transitions->initial_state();
    for (int k = 0; k < n; ++k) {
      int64_t a = k % vocab.actions, tries = 0;
      while (!cell.transitions->allows(s, a) && tries++ < vocab.actions)
        a = (a + 1) % vocab.actions;
      if (!cell.transitions->allows(s, a)) return;  // a dead end: no longer sequence to try
      actions[k] = static_cast<int32_t>(a);
      s = cell.transitions->step(s, a);
      states[k] = static_cast<int32_t>(s);
    }
    const int64_t length = format.sequence_length(n);
    if (length < 1 || length > 64 * int64_t{n} + 4096)
      fail("sequence_length is " + std::to_string(length));
    if (length < previous)
      fail("sequence_length is " + std::to_string(length) + ", shorter than " +
           std::to_string(previous) + " for one action fewer");
    previous = length;
    constexpr int64_t kUnwritten = std::numeric_limits<int64_t>::min();
    tokens.assign(static_cast<size_t>(length) + 8, kUnwritten);
    targets.assign(tokens.size(), kUnwritten);
    format.encode(actions.data(), states.data(), n, vocab, tokens.data(), targets.data());
    for (int64_t t = 0; t < length + 8; ++t) {
      const bool inside = t < length;
      if (!inside && (tokens[t] != kUnwritten || targets[t] != kUnwritten))
        fail("encode wrote past sequence_length (" + std::to_string(length) + ") at position " +
             std::to_string(t));
      if (!inside) continue;
      if (tokens[t] < 0 || tokens[t] >= vocab.size())
        fail(tokens[t] == kUnwritten
                 ? "encode left token " + std::to_string(t) + " unwritten"
                 : "token " + std::to_string(t) + " is " + std::to_string(tokens[t]) +
                       ", outside the vocabulary 0.." + std::to_string(vocab.size() - 1));
      if (targets[t] != kNoTarget && (targets[t] < 0 || targets[t] >= vocab.size()))
        fail(targets[t] == kUnwritten
                 ? "encode left target " + std::to_string(t) + " unwritten"
                 : "target " + std::to_string(t) + " is " + std::to_string(targets[t]) +
                       ", neither kNoTarget nor a token");
    }
    const int64_t final = format.final_position(n);
    if (final < 0 || final >= length)
      fail("final_position is " + std::to_string(final) + ", outside the sequence of " +
           std::to_string(length) + " tokens");
    if (targets[final] != vocab.state_token(states[n - 1]))
      fail("the target at final_position " + std::to_string(final) + " is " +
           std::to_string(targets[final]) + ", not the final state's token " +
           std::to_string(vocab.state_token(states[n - 1])));
    const int64_t prompt = format.prompt_length(n);
    if (prompt < 1 || prompt > length)
      fail("prompt_length is " + std::to_string(prompt) + ", outside 1.." + std::to_string(length));
    if (prompt < length && final < prompt - 1)
      fail("final_position " + std::to_string(final) + " lies inside the prompt of " +
           std::to_string(prompt) + " tokens (the model writes the answer after it)");
    int64_t last = -1;
    const bool positions = format.action_position(n, 0) >= 0;
    for (int k = 0; k < n; ++k) {
      const int64_t at = format.action_position(n, k);
      if (!positions && at == -1) continue;
      if (at <= last || at >= length || tokens[at] != vocab.action_token(actions[k]))
        fail("action_position(" + std::to_string(k) + ") is " + std::to_string(at) +
             ", not the position of that action's token after position " + std::to_string(last));
      last = at;
    }
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
    // LibTorch's errors carry a backtrace after their first line: the message keeps that line.
    const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
    std::string why = torch_error ? torch_error->what_without_backtrace() : e.what();
    throw PluginError(who + ": forward on a [2, " + std::to_string(shape.max_length) +
                      "] batch failed: " + why.substr(0, why.find('\n')));
  }
  return model;
}

CellData make_cell_data(const std::shared_ptr<Task>& task, const std::string& task_name,
                        std::shared_ptr<const Format> format, const std::string& distribution,
                        int L, const ValidationPolicy& validation, uint64_t n_cap) {
  CellData cell;
  cell.task = task;
  cell.transitions = std::make_shared<Transitions>(task, task_name);
  cell.vocab.actions = cell.transitions->num_actions();
  cell.vocab.states = cell.transitions->num_states();
  cell.vocab.extras = format->extra_tokens();
  cell.format = std::move(format);
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
  auto format = make_format_checked(registry, format_section(cell.format));
  return make_cell_data(task, cell.task_name(), std::move(format), cell.distribution, cell.L,
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

}  // namespace induct
