#include "train/generalization.hpp"

#include <torch/utils.h>

#include <algorithm>
#include <numeric>

#include "data/language.hpp"
#include "data/transitions.hpp"
#include "train/evaluation.hpp"
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

// Greedy decoding (a format whose model writes tokens itself, Format::prompt_length): feed the
// prompt, then append the model's argmax at the last position until the sequence is whole.
// Returns {token accuracy over the targets of the written positions, final-state accuracy},
// summed over the set. Every example has n actions, so one layout of targets.
std::pair<double, double> decode_greedily(SequenceModel& model, const ExampleSet& set,
                                          const Format& format, int n, int64_t pad,
                                          int64_t batch_size, torch::Device device) {
  const int64_t width = format.sequence_length(n), prompt = format.prompt_length(n);
  const int64_t final = format.final_position(n) - (prompt - 1);  // among the written positions
  double tokens_right = 0, finals_right = 0;
  std::vector<int64_t> order(set.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  for (size_t start = 0; start < set.size(); start += batch_size) {
    const size_t count = std::min<size_t>(batch_size, set.size() - start);
    Batch all = make_batch(set, order.data() + start, count, pad);
    // The targets of positions prompt - 1 .. width - 1: what the model writes.
    auto answers = all.targets.narrow(1, prompt - 1, width - prompt + 1).to(device);
    auto sequence = all.tokens.narrow(1, 0, prompt).to(device);
    std::vector<torch::Tensor> generated;
    for (int64_t t = prompt - 1; t < width; ++t) {
      auto next = model.forward(sequence).select(1, sequence.size(1) - 1).argmax(-1);  // [B]
      generated.push_back(next);
      if (t + 1 < width) sequence = torch::cat({sequence, next.unsqueeze(1)}, 1);
    }
    auto predicted = torch::stack(generated, 1);
    const auto scored = answers.ne(kNoTarget);
    const double per_row = scored.select(0, 0).sum().item<double>();
    auto right = predicted.eq(answers).logical_and(scored);
    if (per_row > 0) tokens_right += right.sum().item<double>() / per_row;
    finals_right += right.select(1, final).sum().item<double>();
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
    if (generates_tokens(*cell.format, n)) {
      auto [tokens, finals] =
          decode_greedily(model, set, *cell.format, n, cell.vocab.pad(), batch_size, device);
      m.token_accuracy = tokens / static_cast<double>(count);
      m.final_accuracy = finals / static_cast<double>(count);
    }
    out.push_back(m);
  }
  if (was_training) model.train();
  return out;
}

YAML::Node measure_lengthgen(const MeasureContext& context, const YAML::Node& settings) {
  std::vector<int> lengths;
  for (const auto& length : settings["lengths"]) lengths.push_back(length.as<int>());
  return to_yaml(evaluate_generalization(context.model, context.cell, lengths,
                                         settings["samples"].as<uint64_t>(), context.spec.seed,
                                         context.spec.training.eval_batch_size, context.device));
}

}  // namespace induct
