#include "probe/measure.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "data/language.hpp"
#include "data/length_stream.hpp"
#include "options_yaml.hpp"
#include "probe/hook_names.hpp"
#include "probe/probe.hpp"
#include "train/cell_setup.hpp"
#include "train/generalization.hpp"
#include "util/rng.hpp"

namespace induct {

using yaml::exact;

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

}  // namespace

YAML::Node measure_probe(const MeasureContext& context, const YAML::Node& settings) {
  SequenceModel& model = context.model;
  const CellData& cell = context.cell;
  const Transitions& transitions = *cell.transitions;
  const Format& format = *cell.format;
  const Vocabulary& vocab = cell.vocab;
  const int64_t S = vocab.states;
  ProbeSettings fit;
  fit.iterations = settings["iterations"].as<int64_t>();
  fit.l2 = settings["l2"].as<double>();
  const int64_t nullspace_rounds = settings["nullspace_rounds"].as<int64_t>(0);
  const double nullspace_margin = settings["nullspace_margin"].as<double>(0.02);
  const uint64_t samples = settings["samples"].as<uint64_t>();
  std::vector<int> lengths;
  for (const auto& length : settings["lengths"]) lengths.push_back(length.as<int>());
  const int longest = *std::max_element(lengths.begin(), lengths.end());
  const auto language = cell.data.language ? Language::of(transitions, longest, "task") : nullptr;
  torch::NoGradGuard no_grad;

  YAML::Node out;
  out["lengths"] = YAML::Node(YAML::NodeType::Sequence);
  for (int n : lengths) {
    LengthStream stream(vocab.actions, n, derive_seed(context.spec.seed, {kProbe, uint64_t(n)}),
                        LengthStream::kDenseLimit, language);
    const int64_t count = static_cast<int64_t>(std::min<uint64_t>(samples, stream.space()));
    const int64_t fit_rows = count / 2, test_rows = count - fit_rows;
    YAML::Node entry;
    entry["length"] = n;
    entry["sequences"] = count;
    if (fit_rows < 1) {  // a length with a single sequence has nothing to hold out
      entry["hooks"] = YAML::Node(YAML::NodeType::Sequence);
      out["lengths"].push_back(entry);
      continue;
    }
    std::vector<int32_t> actions(static_cast<size_t>(count * n)), states(actions.size());
    for (int64_t i = 0; i < count; ++i) {
      stream.next(&actions[i * n]);
      transitions.prefix_states(&actions[i * n], n, &states[i * n]);
    }
    const torch::Tensor tokens = encode_rows(format, vocab, n, actions, states);
    const torch::Tensor labels = torch::from_blob(states.data(), {count, n}, torch::kInt)
                                     .to(torch::kLong);  // s_t per position
    const int64_t readout = format.final_position(n);
    std::vector<int64_t> at_action(
        static_cast<size_t>(n));  // a_{k+1}'s token: where s_{k+1} is read
    for (int k = 0; k < n; ++k) at_action[k] = format.action_position(n, k);
    const torch::Tensor action_positions = torch::tensor(at_action);
    std::vector<std::string> order;
    const auto acts = record_hooks(model, tokens.to(context.device), &order);

    // The held-out half: the model's own final-state accuracy.
    const torch::Tensor test_tokens = tokens.narrow(0, fit_rows, test_rows).to(context.device);
    const torch::Tensor test_final = labels.narrow(0, fit_rows, test_rows).select(1, n - 1);
    auto accuracy = [&](const torch::Tensor& logits) {
      return predicted_states(logits, readout, vocab)
          .eq(test_final)
          .to(torch::kDouble)
          .mean()
          .item<double>();
    };
    entry["final_accuracy"] = exact(accuracy(forward_with_hooks(model, test_tokens, nullptr)));
    entry["final_chance"] = exact(majority_share(test_final, S));

    // Corrupted twins of the held-out sequences: the middle action changed.
    const int changed = (n - 1) / 2;
    std::vector<int32_t> bad_actions, bad_states, scratch(static_cast<size_t>(n));
    std::vector<int64_t> pair_rows, clean_answer, bad_answer;
    for (int64_t i = fit_rows; i < count; ++i) {
      const int32_t* a = &actions[i * n];
      for (int64_t k = 1; k < vocab.actions; ++k) {
        std::copy(a, a + n, scratch.begin());
        scratch[changed] = static_cast<int32_t>((a[changed] + k) % vocab.actions);
        int64_t s = transitions.initial_state();
        bool valid = true;
        for (int t = 0; t < n && valid; ++t) {
          valid = transitions.allows(s, scratch[t]);
          if (valid) s = transitions.step(s, scratch[t]);
        }
        if (!valid || s == states[i * n + n - 1]) continue;
        const size_t at = bad_states.size();
        bad_actions.insert(bad_actions.end(), scratch.begin(), scratch.end());
        bad_states.resize(at + n);
        transitions.prefix_states(scratch.data(), n, &bad_states[at]);
        pair_rows.push_back(i);
        clean_answer.push_back(vocab.state_token(states[i * n + n - 1]));
        bad_answer.push_back(vocab.state_token(s));
        break;
      }
    }
    const int64_t pairs = static_cast<int64_t>(pair_rows.size());
    entry["changed_position"] = changed;
    entry["pairs"] = pairs;
    torch::Tensor rows, corrupted, clean_gap, bad_gap;
    const auto gap = [&](const torch::Tensor& logits) {  // [pairs]
      auto at = logits.select(1, readout).cpu().to(torch::kDouble);
      return at.gather(1, torch::tensor(clean_answer).unsqueeze(1)).squeeze(1) -
             at.gather(1, torch::tensor(bad_answer).unsqueeze(1)).squeeze(1);
    };
    if (pairs > 0) {
      rows = torch::tensor(pair_rows);
      corrupted = encode_rows(format, vocab, n, bad_actions, bad_states).to(context.device);
      clean_gap =
          gap(forward_with_hooks(model, tokens.index_select(0, rows).to(context.device), nullptr));
      bad_gap = gap(forward_with_hooks(model, corrupted, nullptr));
    }

    // The layers' hook points, and the inner points that are a block's causal convolution.
    std::vector<std::string> layers, convs;
    for (const std::string& name : order) {
      const torch::Tensor& act = acts.at(name);
      if (act.dim() < 3 || act.size(0) != count || act.size(1) != tokens.size(1))
        throw std::runtime_error("hook '" + name + "' gave an activation of shape " +
                                 shape_string(act.sizes()) + "; a hook takes [batch, time, ...]");
      const std::string part = inner_hook_part(name);
      if (part.empty()) layers.push_back(name);
      if (part == "conv") convs.push_back(name);
    }

    YAML::Node hooks(YAML::NodeType::Sequence);
    uint64_t hook_index = 0;
    for (const std::string& name : layers) {
      if (context.check_stop) context.check_stop();  // minutes per hook on a busy machine
      ++hook_index;
      const torch::Tensor& act = acts.at(name);
      const torch::Tensor features = act.index_select(1, action_positions.to(act.device()))
                                         .reshape({count * n, -1})
                                         .to(torch::kFloat)
                                         .cpu();
      const torch::Tensor flat = labels.reshape({count * n});
      const LinearProbe probe =
          fit_probe(features.narrow(0, 0, fit_rows * n), flat.narrow(0, 0, fit_rows * n), S, fit);
      const torch::Tensor held = flat.narrow(0, fit_rows * n, test_rows * n);
      const double probe_chance = majority_share(held, S);
      const double probe_accuracy =
          probe.accuracy(features.narrow(0, fit_rows * n, test_rows * n), held);
      LinearProbe on = probe;  // on the activation's device
      on.mean = probe.mean.to(act.device());
      on.scale = probe.scale.to(act.device());
      on.weight = probe.weight.to(act.device());
      on.bias = probe.bias.to(act.device());
      const double ablated =
          accuracy(run_edited(model, test_tokens, name, [&](const torch::Tensor& x) {
            return on.ablate(x.reshape({x.size(0), x.size(1), -1}).to(torch::kFloat))
                .to(x.dtype())
                .reshape(x.sizes());
          }));
      YAML::Node h;
      h["name"] = name;
      h["probe"] = exact(above_chance(probe_accuracy, probe_chance));
      h["probe_accuracy"] = exact(probe_accuracy);
      h["probe_chance"] = exact(probe_chance);
      h["ablated_accuracy"] = exact(ablated);
      if (nullspace_rounds > 0) {
        // The whole readable subspace removed at every position, and the random control.
        const RemovedSubspace removed = nullspace_projection(
            features.narrow(0, 0, fit_rows * n), flat.narrow(0, 0, fit_rows * n),
            features.narrow(0, fit_rows * n, test_rows * n), held, S, fit, nullspace_rounds,
            nullspace_margin);
        const RemovedSubspace control = random_subspace(
            removed, derive_seed(context.spec.seed, {kProbe, uint64_t(n), hook_index}));
        const auto without = [&](const RemovedSubspace& subspace) {
          return accuracy(run_edited(model, test_tokens, name, [&](const torch::Tensor& x) {
            return subspace.remove(x.reshape({x.size(0), x.size(1), -1}).to(torch::kFloat))
                .to(x.dtype())
                .reshape(x.sizes());
          }));
        };
        h["nullspace_dims"] = removed.dims();
        h["nullspace_rounds"] = removed.rounds;
        h["nullspace_probe"] = exact(above_chance(removed.probe_accuracy, probe_chance));
        h["nullspace_accuracy"] = exact(without(removed));
        h["random_accuracy"] = exact(without(control));
      }
      for (const auto& [key, position] :
           {std::pair<const char*, int64_t>{"patch_changed", at_action[changed]},
            {"patch_readout", readout}}) {
        double share = 0;
        if (pairs > 0) {
          const torch::Tensor value =
              act.index_select(0, rows.to(act.device())).select(1, position);
          share = recovered_share(clean_gap, bad_gap,
                                  gap(run_patched(model, corrupted, name, position, value)));
        }
        h[key] = exact(share);
      }
      hooks.push_back(h);
    }
    entry["hooks"] = hooks;

    // A block's convolution: in the corrupted runs, its clean output at every position (all its
    // scan reads of the sequence restored: the share of the change carried through it), and
    // on the held-out half its output set to the fitting half's mean at each position.
    YAML::Node conv_points(YAML::NodeType::Sequence);
    for (const std::string& name : convs) {
      if (context.check_stop) context.check_stop();
      const torch::Tensor& act = acts.at(name);
      const torch::Tensor mean = act.narrow(0, 0, fit_rows).mean(0, true);  // [1, T, ...]
      YAML::Node h;
      h["name"] = name;
      h["ablated_accuracy"] = exact(accuracy(run_edited(
          model, test_tokens, name, [&](const torch::Tensor& x) { return mean.expand_as(x); })));
      double share = 0;
      if (pairs > 0) {
        const torch::Tensor clean = act.index_select(0, rows.to(act.device()));
        share = recovered_share(
            clean_gap, bad_gap,
            gap(run_edited(model, corrupted, name, [&](const torch::Tensor&) { return clean; })));
      }
      h["patch"] = exact(share);
      conv_points.push_back(h);
    }
    if (!convs.empty()) entry["convs"] = conv_points;
    out["lengths"].push_back(entry);
  }
  return out;
}

}  // namespace induct
