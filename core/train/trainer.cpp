#include "train/trainer.hpp"

#include <ATen/Context.h>
#include <torch/nn/functional/activation.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <induct/nn/loss.hpp>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>

#include "options_yaml.hpp"
#include "train/archive_file.hpp"
#include "train/optimizer.hpp"
#include "util/rng.hpp"

namespace induct {

Batch make_batch(const ExampleSet& set, const int64_t* order, size_t count, int64_t pad,
                 bool pinned) {
  int64_t width = 0;
  for (size_t i = 0; i < count; ++i) width = std::max(width, set.width(order[i]));
  const auto b = static_cast<int64_t>(count);
  const auto options = torch::TensorOptions(torch::kLong).pinned_memory(pinned);
  Batch batch{torch::full({b, width}, pad, options), torch::full({b, width}, kNoTarget, options)};
  int64_t* tokens = batch.tokens.data_ptr<int64_t>();
  int64_t* targets = batch.targets.data_ptr<int64_t>();
  for (size_t i = 0; i < count; ++i) set.encode(order[i], tokens + i * width, targets + i * width);
  return batch;
}

EvalMetrics evaluate(SequenceModel& model, const ExampleSet& set, int64_t pad, int64_t batch_size,
                     torch::Device device) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();

  struct Sums {
    int64_t count = 0, positions = 0;
    double loss = 0, correct = 0, final_correct = 0;
  };
  std::map<int, Sums> by_length;
  std::vector<int64_t> order(set.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  const bool pinned = device.is_cuda();
  // Per-example sums stay on the device until the whole set is evaluated: one copy to the
  // host per evaluation, not one per batch.
  std::vector<torch::Tensor> loss_sums, position_counts, correct_counts, final_flags;
  for (size_t start = 0; start < set.size(); start += batch_size) {
    const size_t count = std::min<size_t>(batch_size, set.size() - start);
    Batch batch = make_batch(set, order.data() + start, count, pad, pinned);
    torch::Tensor targets = batch.targets.to(device, /*non_blocking=*/true);
    torch::Tensor logits = model.forward(batch.tokens.to(device, /*non_blocking=*/true))
                               .to(torch::kFloat);  // [B, W, V]
    torch::Tensor mask = targets.ne(kNoTarget);     // [B, W]
    torch::Tensor safe = targets.clamp_min(0);
    torch::Tensor nll = -torch::log_softmax(logits, -1).gather(2, safe.unsqueeze(2)).squeeze(2);
    nll = nll.masked_fill(~mask, 0);                                          // [B, W]
    torch::Tensor correct = logits.argmax(-1).eq(targets).logical_and(mask);  // [B, W]
    torch::Tensor final_pos = torch::empty(
        {static_cast<int64_t>(count)}, torch::TensorOptions(torch::kLong).pinned_memory(pinned));
    for (size_t i = 0; i < count; ++i)
      final_pos.data_ptr<int64_t>()[i] = set.final_position(start + i);
    torch::Tensor final_index = final_pos.to(device, /*non_blocking=*/true).unsqueeze(1);
    torch::Tensor final_correct = correct.gather(1, final_index).squeeze(1);  // [B]

    loss_sums.push_back(nll.sum(1));
    position_counts.push_back(mask.sum(1));
    correct_counts.push_back(correct.sum(1));
    final_flags.push_back(final_correct.to(torch::kLong));
  }
  if (!loss_sums.empty()) {
    const torch::Tensor loss_sum =
        torch::cat(loss_sums).to(torch::kCPU, torch::kDouble).contiguous();
    const torch::Tensor positions =
        torch::cat(position_counts).to(torch::kCPU, torch::kLong).contiguous();
    const torch::Tensor correct_sum =
        torch::cat(correct_counts).to(torch::kCPU, torch::kLong).contiguous();
    const torch::Tensor final_cpu =
        torch::cat(final_flags).to(torch::kCPU, torch::kLong).contiguous();
    for (size_t i = 0; i < set.size(); ++i) {
      Sums& s = by_length[set.length(i)];
      s.count += 1;
      s.positions += positions.data_ptr<int64_t>()[i];
      s.loss += loss_sum.data_ptr<double>()[i];
      s.correct += static_cast<double>(correct_sum.data_ptr<int64_t>()[i]);
      s.final_correct += static_cast<double>(final_cpu.data_ptr<int64_t>()[i]);
    }
  }
  if (was_training) model.train();

  EvalMetrics metrics;
  Sums total;
  for (const auto& [length, s] : by_length) {
    metrics.per_length.push_back({length, s.count, s.positions ? s.loss / s.positions : 0,
                                  s.positions ? s.correct / s.positions : 0,
                                  s.count ? s.final_correct / s.count : 0});
    total.count += s.count;
    total.positions += s.positions;
    total.loss += s.loss;
    total.correct += s.correct;
    total.final_correct += s.final_correct;
  }
  metrics.count = total.count;
  metrics.loss = total.positions ? total.loss / total.positions : 0;
  metrics.token_accuracy = total.positions ? total.correct / total.positions : 0;
  metrics.final_accuracy = total.count ? total.final_correct / total.count : 0;
  return metrics;
}

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kGoOn:
      return "";
    case Verdict::kStalled:
      return "stalled";
    case Verdict::kMemorised:
      return "memorised";
    case Verdict::kPlateau:
      return "plateau";
  }
  return "";
}

Verdict failure_verdict(const std::vector<EvalPoint>& history, double best_loss, double chance_loss,
                        const TrainSettings& settings) {
  const int64_t window = settings.stall_window;
  if (window <= 0 || history.empty()) return Verdict::kGoOn;
  const int64_t now = history.back().step;
  const bool on_plateau =
      chance_loss > 0 && best_loss >= (1.0 - settings.plateau_margin) * chance_loss;
  if (on_plateau && settings.plateau_patience > 0 && now >= settings.plateau_patience)
    return Verdict::kPlateau;
  if (now < window) return Verdict::kGoOn;
  // The window: stall_window steps, or the last stall_fraction of the run when longer (a run
  // at step 20,000 is judged on its progress since step 10,000 with a fraction of 0.5).
  const auto span = std::max<int64_t>(
      window, static_cast<int64_t>(settings.stall_fraction * static_cast<double>(now)));
  // The best loss now against the best loss a window ago.
  double best_then = std::numeric_limits<double>::infinity();
  for (const EvalPoint& p : history)
    if (p.step <= now - span) best_then = std::min(best_then, p.val_loss);
  if (!std::isfinite(best_then)) return Verdict::kGoOn;
  const bool flat = best_loss > best_then * (1.0 - settings.stall_improvement);
  if (flat && settings.memorised_loss > 0 && history.back().train_loss < settings.memorised_loss)
    return Verdict::kMemorised;
  if (on_plateau) return Verdict::kGoOn;
  if (flat) return Verdict::kStalled;
  if (settings.stall_projection <= 0) return Verdict::kGoOn;
  // Falling on at stall_projection times the window's rate, where would it be at max_steps?
  const double rate = (std::log(best_then) - std::log(best_loss)) / static_cast<double>(span);
  const auto remaining = static_cast<double>(settings.max_steps - now);
  return std::log(best_loss) - settings.stall_projection * rate * remaining >
                 std::log(settings.epsilon)
             ? Verdict::kStalled
             : Verdict::kGoOn;
}

double chance_loss(const std::vector<const ExampleSet*>& sets) {
  std::map<int64_t, double> counts;
  double total = 0;
  std::vector<int64_t> tokens, targets;
  for (const ExampleSet* set : sets)
    for (size_t i = 0; i < set->size(); ++i) {
      tokens.resize(set->width(i));
      targets.resize(set->width(i));
      set->encode(i, tokens.data(), targets.data());
      for (int64_t t : targets)
        if (t != kNoTarget) {
          counts[t] += 1;
          total += 1;
        }
    }
  double entropy = 0;
  for (const auto& [target, count] : counts) entropy -= count / total * std::log(count / total);
  return entropy;
}

namespace {

// A training's state (StateFile), as read back.
struct SavedState {
  TrialResult result;  // steps, history, best loss, last evaluation and seconds so far
  torch::Tensor exp_avg, exp_avg_sq;
  int64_t adam_steps = 0;
  std::array<uint64_t, 4>
      pass_rng{};      // the data order's generator before the current pass's shuffle
  int64_t cursor = 0;  // the next example of that pass
  torch::Tensor cpu_generator, device_generator;
};

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

// Whether a training with these settings would have gone on past the end of `history`, with
// the same evaluations (no success, no verdict of its own detector at any of them, the last at
// one of its own evaluation steps), so that it may go on from there as if run from the start.
bool reaches(const std::vector<EvalPoint>& history, double chance, const TrainSettings& settings) {
  const int64_t last = history.back().step;
  if (last > settings.max_steps || (last % settings.eval_every != 0 && last != settings.max_steps))
    return false;
  std::vector<EvalPoint> prefix;
  double best = std::numeric_limits<double>::infinity();
  for (const EvalPoint& p : history) {
    if (!std::isfinite(p.val_loss) || p.val_loss < settings.epsilon) return false;
    prefix.push_back(p);
    best = std::min(best, p.val_loss);
    if (p.step < settings.max_steps &&
        failure_verdict(prefix, best, chance, settings) != Verdict::kGoOn)
      return false;
  }
  return true;
}

// The state of `file` when it belongs to this trajectory and these settings reach it; the
// model's parameters and buffers are loaded then (before the optimizer takes them over).
// `unreached`: the file is a state of this trajectory that these settings would not reach.
std::optional<SavedState> read_state(const StateFile& file, SequenceModel& model,
                                     const TrainSettings& settings, double chance,
                                     torch::Device device, bool& unreached) {
  unreached = false;
  if (!std::filesystem::exists(file.path)) return std::nullopt;
  SavedState state;
  try {
    torch::serialize::InputArchive archive;
    read_archive_file(archive, file.path, device);
    if (read_text(archive, "trajectory") != file.trajectory) return std::nullopt;
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
    std::cerr << "induct: " << file.path << ": not a usable training state ("
              << e.what_without_backtrace() << "); training from the start\n";
    return std::nullopt;
  } catch (const std::exception& e) {
    // Unreadable (damaged, cut short, written by an earlier induct): train from the start.
    std::cerr << "induct: " << file.path << ": not a usable training state (" << e.what()
              << "); training from the start\n";
    return std::nullopt;
  }
  return state;
}

// Writes the training state; a failure is reported once per training (`reported`), not at
// every save, and the training goes on.
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
    std::cerr << "induct: could not save the training state " << file.path << ": " << message
              << " (the training goes on without it; not said again for this training)\n";
  }
}

}  // namespace

TrialResult train_model(SequenceModel& model, const TrainData& data, const TrainSettings& settings,
                        double lr, uint64_t seed, torch::Device device, TrainObserver* observer,
                        const StateFile* state) {
  const auto started = std::chrono::steady_clock::now();
  TrialResult result;
  result.best_loss = std::numeric_limits<double>::infinity();
  const ExampleSet& eval_set = data.validation.size() > 0 ? data.validation : data.train;
  result.validated_on_training = data.validation.size() == 0;
  if (settings.stall_window > 0) result.chance_loss = data.chance_loss;

  // A saved state of this trajectory: its parameters are loaded before the optimizer takes them.
  std::optional<SavedState> saved;
  bool unreached = false;
  if (state) saved = read_state(*state, model, settings, result.chance_loss, device, unreached);
  model.train();
  // Adam, betas 0.9/0.999, eps 1e-8, no weight decay (docs/method.md section 4), over one flat
  // buffer.
  FlatAdam optimizer(model.parameters(), lr, 0.9, 0.999, 1e-8);
  Rng rng(derive_seed(seed, {kDataOrder}));
  const size_t n = data.train.size();
  std::vector<int64_t> order(n);
  size_t cursor = n;  // start a new pass at once
  std::array<uint64_t, 4> pass_rng = rng.state();
  const auto new_pass = [&] {
    // A new pass over the data, shuffled as a DataLoader with shuffle=True would.
    pass_rng = rng.state();
    std::iota(order.begin(), order.end(), int64_t{0});
    rng.shuffle(order.begin(), order.end());
    if (data.ascending)
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return data.train.length(a) < data.train.length(b);
      });
    cursor = 0;
  };
  int64_t saved_at = 0;  // the step of the state file's state (0: none)
  double earlier_seconds = 0;
  if (saved) {
    optimizer.restore(saved->exp_avg.to(device), saved->exp_avg_sq.to(device), saved->adam_steps);
    rng.set_state(saved->pass_rng);
    new_pass();
    cursor = static_cast<size_t>(saved->cursor);
    set_generator_state(torch::kCPU, saved->cpu_generator);
    if (!device.is_cpu()) set_generator_state(device, saved->device_generator);
    const double chance = result.chance_loss;
    result = saved->result;
    result.chance_loss = chance;
    result.stalled =
        false;  // a detector's stop, where this training has no detector or a later one
    result.stopped_by.clear();
    earlier_seconds = result.seconds;
    saved_at = result.steps;
    result.resumed_at = result.steps;
  } else if (unreached) {
    // A state these settings would not have reached (a success or a detector verdict comes
    // first): trained from the start, and the file is left as it is.
    state = nullptr;
  }
  bool state_failure_reported = false;
  const auto save = [&] {
    result.seconds =
        earlier_seconds +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    write_state(*state, model, optimizer, pass_rng, static_cast<int64_t>(cursor), result, device,
                state_failure_reported);
    saved_at = result.steps;
  };
  const bool pinned = device.is_cuda();
  // The training losses since the last evaluation stay on the device; they are read once, at
  // the next evaluation (no host synchronisation per step). A non-finite one is found there,
  // and the run is reported as it would have been had it been read at its own step: diverged
  // at that step, without the evaluation.
  std::vector<torch::Tensor> window;
  window.reserve(static_cast<size_t>(std::min<int64_t>(settings.eval_every, 1 << 16)));
  double mean_loss = 0;
  const auto read_window = [&]() -> bool {  // false: diverged
    if (window.empty()) return true;
    const torch::Tensor losses = torch::stack(window).to(torch::kCPU, torch::kDouble).contiguous();
    const double* values = losses.data_ptr<double>();
    const int64_t first_step = result.steps - static_cast<int64_t>(window.size()) + 1;
    double sum = 0;
    for (size_t i = 0; i < window.size(); ++i) {
      if (!std::isfinite(values[i])) {
        result.steps = first_step + static_cast<int64_t>(i);
        result.status = TrialStatus::kDiverged;
        result.error = "non-finite training loss at step " + std::to_string(result.steps);
        window.clear();
        return false;
      }
      sum += values[i];
    }
    mean_loss = sum / static_cast<double>(window.size());
    window.clear();
    return true;
  };
  result.status = TrialStatus::kFailed;

  while (result.steps < settings.max_steps) {
    if (observer && observer->should_stop()) {
      if (read_window()) result.status = TrialStatus::kCancelled;
      break;
    }
    if (cursor >= n) new_pass();
    const size_t count = std::min<size_t>(settings.batch_size, n - cursor);
    Batch batch = make_batch(data.train, order.data() + cursor, count, data.pad, pinned);
    cursor += count;

    torch::Tensor logits =
        model.forward(batch.tokens.to(device, /*non_blocking=*/true));  // [B, W, V]
    torch::Tensor loss =
        nn::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                          batch.targets.to(device, /*non_blocking=*/true).reshape({-1}), kNoTarget);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    ++result.steps;
    window.push_back(loss.detach());

    if (result.steps % settings.eval_every == 0 || result.steps == settings.max_steps) {
      if (!read_window()) break;
      result.last = evaluate(model, eval_set, data.pad, settings.eval_batch_size, device);
      EvalPoint point{result.steps, mean_loss, result.last.loss};
      result.history.push_back(point);
      if (!std::isfinite(result.last.loss)) {
        result.status = TrialStatus::kDiverged;
        result.error = "non-finite validation loss at step " + std::to_string(result.steps);
        break;
      }
      result.best_loss = std::min(result.best_loss, result.last.loss);
      if (observer) observer->on_eval(point, result.best_loss);
      if (result.last.loss < settings.epsilon) {
        result.status = TrialStatus::kSucceeded;
        break;
      }
      const Verdict verdict =
          failure_verdict(result.history, result.best_loss, result.chance_loss, settings);
      if (verdict != Verdict::kGoOn) {
        result.stalled = true;
        result.stopped_by = to_string(verdict);
        break;  // status stays failed
      }
      if (state && state->every > 0 && result.steps - saved_at >= state->every) save();
    }
  }
  if (state) {
    if (result.status == TrialStatus::kFailed &&
        (state->keep_final || (state->keep_stopped && result.stalled))) {
      if (saved_at != result.steps) save();
    } else if (result.status != TrialStatus::kCancelled) {
      // Succeeded or diverged (nothing to go on from), or a failure not kept. A cancelled
      // training keeps its last state: a rerun resumes there.
      std::error_code ignored;
      std::filesystem::remove(state->path, ignored);
    }
  }
  result.seconds =
      earlier_seconds +
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace induct
