#include "probe/measure.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "data/language.hpp"
#include "data/length_stream.hpp"
#include "probe/hook_names.hpp"
#include "probe/probe.hpp"
#include "train/cell_setup.hpp"
#include "train/generalization.hpp"
#include "util/rng.hpp"

namespace induct {

namespace {

// Tokens [rows, width] of sequences of n actions (actions and their prefix states, row-major).
torch::Tensor encode_rows(const Format& format, const Vocabulary& vocab, int n,
                          const std::vector<int32_t>& actions, const std::vector<int32_t>& states) {
  const int64_t rows = static_cast<int64_t>(actions.size()) / n;
  const int64_t width = format.sequence_length(n);
  auto tokens = torch::empty({rows, width}, torch::kLong);
  std::vector<int64_t> targets(static_cast<size_t>(width));
  for (int64_t i = 0; i < rows; ++i)
    format.encode(&actions[i * n], &states[i * n], n, vocab, tokens[i].data_ptr<int64_t>(),
                  targets.data());
  return tokens;
}

// The final state the model predicts at `readout` for each row ([B, T, V] logits).
torch::Tensor predicted_states(const torch::Tensor& logits, int64_t readout,
                               const Vocabulary& vocab) {
  return logits.select(1, readout).narrow(-1, vocab.state_token(0), vocab.states).argmax(-1).cpu();
}

// One length's sequences and where the model is read: the first `fit_rows` fit the probes,
// the rest (the held-out half) test them and the model.
struct Sample {
  int n = 0;
  int64_t count = 0, fit_rows = 0, test_rows = 0;
  std::vector<int32_t> actions, states;  // [count, n], row-major: actions, prefix states
  torch::Tensor tokens;                  // [count, width]
  torch::Tensor labels;                  // [count, n]: s_t per action
  int64_t readout = 0;                   // the final state's prediction position
  std::vector<int64_t> at_action;        // a_{k+1}'s token: where s_{k+1} is read
  torch::Tensor test_tokens;             // the held-out half, on the model's device
  torch::Tensor test_final;              // its final states
};

Sample draw_sample(const MeasureContext& context, int n, uint64_t samples,
                   const std::shared_ptr<const Language>& language) {
  const CellData& cell = context.cell;
  const Vocabulary& vocab = cell.vocab;
  LengthStream stream(vocab.actions, n, derive_seed(context.spec.seed, {kProbe, uint64_t(n)}),
                      LengthStream::kDenseLimit, language);
  Sample s;
  s.n = n;
  s.count = static_cast<int64_t>(std::min<uint64_t>(samples, stream.space()));
  s.fit_rows = s.count / 2;
  s.test_rows = s.count - s.fit_rows;
  if (s.fit_rows < 1) return s;  // a single sequence: nothing to hold out
  s.actions.resize(static_cast<size_t>(s.count * n));
  s.states.resize(s.actions.size());
  for (int64_t i = 0; i < s.count; ++i) {
    stream.next(&s.actions[i * n]);
    cell.transitions->prefix_states(&s.actions[i * n], n, &s.states[i * n]);
  }
  s.tokens = encode_rows(*cell.format, vocab, n, s.actions, s.states);
  s.labels = torch::from_blob(s.states.data(), {s.count, n}, torch::kInt).to(torch::kLong);
  s.readout = cell.format->final_position(n);
  s.at_action.resize(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) s.at_action[k] = cell.format->action_position(n, k);
  s.test_tokens = s.tokens.narrow(0, s.fit_rows, s.test_rows).to(context.device);
  s.test_final = s.labels.narrow(0, s.fit_rows, s.test_rows).select(1, n - 1);
  return s;
}

// Corrupted twins of the held-out sequences: the middle action changed to the first other
// action that keeps the sequence valid and changes its final state (sequences with none have
// no twin), and the logit gap logit(clean final state) - logit(corrupted final state) at the
// readout of the clean and of the corrupted runs.
struct Twins {
  int changed = 0;
  int64_t pairs = 0;
  torch::Tensor rows;       // the clean rows of the sample, [pairs]
  torch::Tensor corrupted;  // their twins' tokens, on the model's device
  std::vector<int64_t> clean_answer, bad_answer;
  torch::Tensor clean_gap, bad_gap;  // [pairs]

  torch::Tensor gap(const torch::Tensor& logits, int64_t readout) const {
    auto at = logits.select(1, readout).cpu().to(torch::kDouble);
    return at.gather(1, torch::tensor(clean_answer).unsqueeze(1)).squeeze(1) -
           at.gather(1, torch::tensor(bad_answer).unsqueeze(1)).squeeze(1);
  }
  // The share of the gap an edited corrupted run recovers (0 without pairs).
  double recovered(const torch::Tensor& edited_logits, int64_t readout) const {
    return pairs > 0 ? recovered_share(clean_gap, bad_gap, gap(edited_logits, readout)) : 0.0;
  }
};

Twins corrupt_middle(const MeasureContext& context, const Sample& s) {
  const Transitions& transitions = *context.cell.transitions;
  const Vocabulary& vocab = context.cell.vocab;
  const int n = s.n;
  Twins t;
  t.changed = (n - 1) / 2;
  std::vector<int32_t> bad_actions, bad_states, scratch(static_cast<size_t>(n));
  std::vector<int64_t> pair_rows;
  for (int64_t i = s.fit_rows; i < s.count; ++i) {
    const int32_t* a = &s.actions[i * n];
    for (int64_t k = 1; k < vocab.actions; ++k) {
      std::copy(a, a + n, scratch.begin());
      scratch[t.changed] = static_cast<int32_t>((a[t.changed] + k) % vocab.actions);
      int64_t state = transitions.initial_state();
      bool valid = true;
      for (int step = 0; step < n && valid; ++step) {
        valid = transitions.allows(state, scratch[step]);
        if (valid) state = transitions.step(state, scratch[step]);
      }
      if (!valid || state == s.states[i * n + n - 1]) continue;
      const size_t at = bad_states.size();
      bad_actions.insert(bad_actions.end(), scratch.begin(), scratch.end());
      bad_states.resize(at + n);
      transitions.prefix_states(scratch.data(), n, &bad_states[at]);
      pair_rows.push_back(i);
      t.clean_answer.push_back(vocab.state_token(s.states[i * n + n - 1]));
      t.bad_answer.push_back(vocab.state_token(state));
      break;
    }
  }
  t.pairs = static_cast<int64_t>(pair_rows.size());
  if (t.pairs > 0) {
    SequenceModel& model = context.model;
    t.rows = torch::tensor(pair_rows);
    t.corrupted =
        encode_rows(*context.cell.format, vocab, n, bad_actions, bad_states).to(context.device);
    t.clean_gap = t.gap(
        forward_with_hooks(model, s.tokens.index_select(0, t.rows).to(context.device), nullptr),
        s.readout);
    t.bad_gap = t.gap(forward_with_hooks(model, t.corrupted, nullptr), s.readout);
  }
  return t;
}

// The model's final-state accuracy on the held-out half from its logits.
double held_out_accuracy(const MeasureContext& context, const Sample& s,
                         const torch::Tensor& logits) {
  return predicted_states(logits, s.readout, context.cell.vocab)
      .eq(s.test_final)
      .to(torch::kDouble)
      .mean()
      .item<double>();
}

using Edit = std::function<torch::Tensor(const torch::Tensor&)>;

// An edit that applies `f` to a hook's activation flattened to [B, T, D] in float32.
Edit flattened(const Edit& f) {
  return [f](const torch::Tensor& x) {
    return f(x.reshape({x.size(0), x.size(1), -1}).to(torch::kFloat))
        .to(x.dtype())
        .reshape(x.sizes());
  };
}

// A layer's hook point: the probe fitted on the fitting half at every action position, its
// held-out accuracy, the model with the probe's directions ablated, the nullspace removal and
// its random control, and patching at the changed position and the readout.
HookMeasurement measure_hook(const MeasureContext& context, const ProbeMeasureSettings& settings,
                             const Sample& s, const Twins& twins, const std::string& name,
                             const torch::Tensor& act, uint64_t hook_index) {
  SequenceModel& model = context.model;
  const int64_t S = context.cell.vocab.states;
  const int n = s.n;
  const torch::Tensor features = act.index_select(1, torch::tensor(s.at_action).to(act.device()))
                                     .reshape({s.count * n, -1})
                                     .to(torch::kFloat)
                                     .cpu();
  const torch::Tensor flat = s.labels.reshape({s.count * n});
  const torch::Tensor fit_x = features.narrow(0, 0, s.fit_rows * n);
  const torch::Tensor fit_y = flat.narrow(0, 0, s.fit_rows * n);
  const torch::Tensor test_x = features.narrow(0, s.fit_rows * n, s.test_rows * n);
  const torch::Tensor held = flat.narrow(0, s.fit_rows * n, s.test_rows * n);
  const auto accuracy = [&](const torch::Tensor& logits) {
    return held_out_accuracy(context, s, logits);
  };

  HookMeasurement h;
  h.name = name;
  // Fit the probe; ablate its directions (on the activation's device).
  const LinearProbe probe = fit_probe(fit_x, fit_y, S, settings.fit);
  h.probe_chance = majority_share(held, S);
  h.probe_accuracy = probe.accuracy(test_x, held);
  h.probe = above_chance(h.probe_accuracy, h.probe_chance);
  LinearProbe on = probe;
  on.mean = probe.mean.to(act.device());
  on.scale = probe.scale.to(act.device());
  on.weight = probe.weight.to(act.device());
  on.bias = probe.bias.to(act.device());
  h.ablated_accuracy = accuracy(run_edited(
      model, s.test_tokens, name, flattened([&](const torch::Tensor& x) { return on.ablate(x); })));

  // Remove the whole readable subspace at every position, and the random control.
  if (settings.nullspace_rounds > 0) {
    const RemovedSubspace removed =
        nullspace_projection(fit_x, fit_y, test_x, held, S, settings.fit, settings.nullspace_rounds,
                             settings.nullspace_margin);
    const RemovedSubspace control =
        random_subspace(removed, derive_seed(context.spec.seed, {kProbe, uint64_t(n), hook_index}));
    const auto without = [&](const RemovedSubspace& subspace) {
      return accuracy(run_edited(model, s.test_tokens, name, flattened([&](const torch::Tensor& x) {
                                   return subspace.remove(x);
                                 })));
    };
    HookMeasurement::Nullspace null;
    null.dims = removed.dims();
    null.rounds = removed.rounds;
    null.probe = above_chance(removed.probe_accuracy, h.probe_chance);
    null.accuracy = without(removed);
    null.random_accuracy = without(control);
    h.nullspace = null;
  }

  // Patch the clean activation into the corrupted runs at one position.
  const auto patch_at = [&](int64_t position) {
    if (twins.pairs == 0) return 0.0;
    const torch::Tensor value =
        act.index_select(0, twins.rows.to(act.device())).select(1, position);
    return twins.recovered(run_patched(model, twins.corrupted, name, position, value), s.readout);
  };
  h.patch_changed = patch_at(s.at_action[twins.changed]);
  h.patch_readout = patch_at(s.readout);
  return h;
}

// A block's convolution: in the corrupted runs, its clean output at every position (all its
// scan reads of the sequence restored: the share of the change carried through it), and on the
// held-out half its output set to the fitting half's mean at each position.
ConvMeasurement measure_conv(const MeasureContext& context, const Sample& s, const Twins& twins,
                             const std::string& name, const torch::Tensor& act) {
  SequenceModel& model = context.model;
  const torch::Tensor mean = act.narrow(0, 0, s.fit_rows).mean(0, true);  // [1, T, ...]
  ConvMeasurement c;
  c.name = name;
  c.ablated_accuracy = held_out_accuracy(
      context, s, run_edited(model, s.test_tokens, name, [&](const torch::Tensor& x) {
        return mean.expand_as(x);
      }));
  if (twins.pairs > 0) {
    const torch::Tensor clean = act.index_select(0, twins.rows.to(act.device()));
    c.patch = twins.recovered(
        run_edited(model, twins.corrupted, name, [&](const torch::Tensor&) { return clean; }),
        s.readout);
  }
  return c;
}

LengthMeasurement measure_length(const MeasureContext& context,
                                 const ProbeMeasureSettings& settings, int n,
                                 const std::shared_ptr<const Language>& language) {
  SequenceModel& model = context.model;
  const Sample s = draw_sample(context, n, settings.samples, language);
  LengthMeasurement out;
  out.length = n;
  out.sequences = s.count;
  if (s.fit_rows < 1) return out;
  out.probed = true;
  std::vector<std::string> order;
  const auto acts = record_hooks(model, s.tokens.to(context.device), &order);
  out.final_accuracy =
      held_out_accuracy(context, s, forward_with_hooks(model, s.test_tokens, nullptr));
  out.final_chance = majority_share(s.test_final, context.cell.vocab.states);
  const Twins twins = corrupt_middle(context, s);
  out.changed_position = twins.changed;
  out.pairs = twins.pairs;

  // The layers' hook points, and the inner points that are a block's causal convolution.
  std::vector<std::string> layers, convs;
  for (const std::string& name : order) {
    const torch::Tensor& act = acts.at(name);
    if (act.dim() < 3 || act.size(0) != s.count || act.size(1) != s.tokens.size(1))
      throw std::runtime_error("hook '" + name + "' gave an activation of shape " +
                               shape_string(act.sizes()) + "; a hook takes [batch, time, ...]");
    const std::string part = inner_hook_part(name);
    if (part.empty()) layers.push_back(name);
    if (part == "conv") convs.push_back(name);
  }
  uint64_t hook_index = 0;
  for (const std::string& name : layers) {
    if (context.check_stop) context.check_stop();  // minutes per hook on a busy machine
    out.hooks.push_back(
        measure_hook(context, settings, s, twins, name, acts.at(name), ++hook_index));
  }
  for (const std::string& name : convs) {
    if (context.check_stop) context.check_stop();
    out.convs.push_back(measure_conv(context, s, twins, name, acts.at(name)));
  }
  return out;
}

}  // namespace

ProbeMeasurement measure_probe(const MeasureContext& context,
                               const ProbeMeasureSettings& settings) {
  const CellData& cell = context.cell;
  const int longest = *std::max_element(settings.lengths.begin(), settings.lengths.end());
  const auto language =
      cell.data.language ? Language::of(*cell.transitions, longest, "task") : nullptr;
  torch::NoGradGuard no_grad;
  ProbeMeasurement out;
  for (int n : settings.lengths)
    out.lengths.push_back(measure_length(context, settings, n, language));
  return out;
}

}  // namespace induct
