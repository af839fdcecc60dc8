#include "train/generalization.hpp"

#include <torch/utils.h>

#include <algorithm>
#include <numeric>

#include "data/language.hpp"
#include "data/transitions.hpp"
#include "train/trainer.hpp"
#include "util/rng.hpp"

namespace induct {

double above_chance(double accuracy, double chance) {
  return chance >= 1 ? 0 : (accuracy - chance) / (1.0 - chance);
}

double normalized_accuracy(double accuracy, int64_t states) {
  if (states < 2) return accuracy;
  return above_chance(accuracy, 1.0 / static_cast<double>(states));
}

namespace {

// Greedy decoding of CoT: feed x_1..x_n SEP, then append the model's argmax n times.
// Returns {token accuracy, final-state accuracy} summed over the set.
std::pair<double, double> decode_greedily(SequenceModel& model, const ExampleSet& set, int n,
                                          int64_t pad, int64_t batch_size, torch::Device device) {
  double tokens_right = 0, finals_right = 0;
  std::vector<int64_t> order(set.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  for (size_t start = 0; start < set.size(); start += batch_size) {
    const size_t count = std::min<size_t>(batch_size, set.size() - start);
    // All examples have 2n tokens; the prompt is the first n + 1, the answers the targets
    // from position n on.
    Batch all = make_batch(set, order.data() + start, count, pad);
    auto answers = all.targets.narrow(1, n, n).to(device);      // [B, n]
    auto sequence = all.tokens.narrow(1, 0, n + 1).to(device);  // [B, n + 1]
    std::vector<torch::Tensor> generated;
    for (int k = 0; k < n; ++k) {
      auto next = model.forward(sequence).select(1, sequence.size(1) - 1).argmax(-1);  // [B]
      generated.push_back(next);
      if (k + 1 < n) sequence = torch::cat({sequence, next.unsqueeze(1)}, 1);
    }
    auto predicted = torch::stack(generated, 1);  // [B, n]
    auto right = predicted.eq(answers);
    tokens_right += right.sum().item<double>() / n;
    finals_right += right.select(1, n - 1).sum().item<double>();
  }
  return {tokens_right, finals_right};
}

}  // namespace

std::vector<LengthMetrics> evaluate_generalization(SequenceModel& model, const CellData& cell,
                                                   const std::vector<int>& lengths,
                                                   uint64_t samples, uint64_t seed,
                                                   int64_t batch_size, torch::Device device) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  std::vector<LengthMetrics> out;
  int longest = 0;
  for (int n : lengths) longest = std::max(longest, n);
  const auto language =
      cell.data.language ? Language::of(*cell.transitions, longest, "task") : nullptr;
  for (int n : lengths) {
    LengthStream stream(cell.vocab.actions, n, derive_seed(seed, {kGeneralization, uint64_t(n)}),
                        LengthStream::kDenseLimit, language);
    const uint64_t count = std::min<uint64_t>(samples, stream.space());
    SequenceSet sequences;
    for (uint64_t i = 0; i < count; ++i) sequences.add(stream.codec(), stream.next_code());
    ExampleSet set(sequences, *cell.transitions, *cell.format, cell.vocab);
    EvalMetrics forced = evaluate(model, set, cell.vocab.pad(), batch_size, device);
    LengthMetrics m{n, forced.count, forced.loss, forced.token_accuracy, forced.final_accuracy};
    if (cell.format->generates_states()) {
      auto [tokens, finals] = decode_greedily(model, set, n, cell.vocab.pad(), batch_size, device);
      m.token_accuracy = tokens / static_cast<double>(count);
      m.final_accuracy = finals / static_cast<double>(count);
    }
    out.push_back(m);
  }
  if (was_training) model.train();
  return out;
}

}  // namespace induct
