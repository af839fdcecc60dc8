#include "train/evaluation.hpp"

#include <torch/utils.h>

#include <cmath>
#include <induct/nn/loss.hpp>
#include <map>
#include <numeric>

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

}  // namespace induct
