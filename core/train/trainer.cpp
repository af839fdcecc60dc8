#include "train/trainer.hpp"

#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <induct/nn/loss.hpp>
#include <numeric>
#include <optional>

#include "train/detector.hpp"
#include "train/evaluation.hpp"
#include "train/optimizer.hpp"
#include "util/rng.hpp"

namespace induct {

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
    restore_generators(*saved, device);
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
