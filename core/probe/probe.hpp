// Reading a model's layers through its hook points (induct/hooks.hpp): linear probes for the
// tracked state, ablation of the probe's directions, and activation patching. The
// measurements behind a layerwise study; they work on any SequenceModel that marks hooks.
#pragma once

#include <torch/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "induct/model.hpp"
#include "probe/settings.hpp"

namespace induct {

// Multinomial logistic regression from activations [M, D] to classes [M] (states), fitted on
// standardised features.
struct LinearProbe {
  torch::Tensor mean, scale;  // [D]: the features are (x - mean) / scale
  torch::Tensor weight;       // [S, D] on the standardised features
  torch::Tensor bias;         // [S]

  torch::Tensor predict(const torch::Tensor& x) const;  // [M, D] -> [M]
  double accuracy(const torch::Tensor& x, const torch::Tensor& labels) const;
  // The probe's directions in the activation's own coordinates: an orthonormal basis [D, k]
  // of the span of the class weights' differences (what the probe's decision depends on).
  torch::Tensor directions() const;
  // x [..., D] with those directions set to the training mean: x - ((x - mean) Q) Q^T.
  torch::Tensor ablate(const torch::Tensor& x) const;
};

LinearProbe fit_probe(const torch::Tensor& x, const torch::Tensor& labels, int64_t classes,
                      const ProbeSettings& settings = {});

// A subspace removed from activations, in the coordinates standardised by the fit half's
// mean and scale: x -> mean + scale * (z - z Q Q^T), z = (x - mean) / scale.
struct RemovedSubspace {
  torch::Tensor mean, scale;  // [D]
  torch::Tensor basis;        // [D, k], orthonormal (k = 0: nothing removed)
  int64_t rounds = 0;         // probes fitted to find it (iterative nullspace projection)
  double probe_accuracy = 0;  // the last probe's held-out accuracy, with the subspace removed
  int64_t dims() const { return basis.defined() ? basis.size(1) : 0; }
  torch::Tensor remove(const torch::Tensor& x) const;  // x [..., D]
};

// Iterative nullspace projection (Ravfogel et al., 2020): fit a probe on the fit rows, remove
// its directions, fit again on what is left, until a probe's accuracy on the held-out rows is
// at most `chance + margin` or `max_rounds` probes were fitted. What a linear probe reads,
// removed whole: a single probe's directions leave a state that is also encoded elsewhere.
RemovedSubspace nullspace_projection(const torch::Tensor& fit_x, const torch::Tensor& fit_labels,
                                     const torch::Tensor& test_x, const torch::Tensor& test_labels,
                                     int64_t classes, const ProbeSettings& settings,
                                     int64_t max_rounds, double margin);

// The control: a random subspace of `removed`'s dimension in the same coordinates (a Gaussian
// matrix's QR from `seed`).
RemovedSubspace random_subspace(const RemovedSubspace& removed, uint64_t seed);

// The share of the most frequent class among labels: the accuracy of always guessing it (the
// chance level for above_chance, train/generalization.hpp).
double majority_share(const torch::Tensor& labels, int64_t classes);

// The model's logits for tokens [B, T] with `handler` on its hooks, in eval mode without
// gradients; the handler is cleared afterwards, also when forward throws. What every reading
// below (and model_hook_names) runs.
torch::Tensor forward_with_hooks(SequenceModel& model, const torch::Tensor& tokens,
                                 Hooks::Handler handler);

// Every hook point's activation for tokens [B, T], in eval mode without gradients; with
// `order`, also the names in the order the forward pass reaches them (input to output).
std::map<std::string, torch::Tensor> record_hooks(SequenceModel& model, const torch::Tensor& tokens,
                                                  std::vector<std::string>* order = nullptr);

// Logits [B, T, V] with the activation of `hook` replaced by edit(activation) (ablation), or
// at one position by value [B, ...] (patching). Eval mode, no gradients; the model's hooks are
// cleared afterwards.
torch::Tensor run_edited(SequenceModel& model, const torch::Tensor& tokens, const std::string& hook,
                         const std::function<torch::Tensor(const torch::Tensor&)>& edit);
torch::Tensor run_patched(SequenceModel& model, const torch::Tensor& tokens,
                          const std::string& hook, int64_t position, const torch::Tensor& value);

// The share of the clean-corrupted gap a patch recovers, for one logit difference per pair
// (e.g. clean answer minus corrupted answer at the readout): sum(patched - corrupted) /
// sum(clean - corrupted) over the pairs, 0 when the gaps sum to 0.
double recovered_share(const torch::Tensor& clean, const torch::Tensor& corrupted,
                       const torch::Tensor& patched);

}  // namespace induct
