// The probe measurement (docs/method.md section 8): what a trial of a `probe` study reads off its
// trained model at every hook point. The study (core/study/probe) names it; the worker runs it.
#pragma once

#include <yaml-cpp/yaml.h>

#include "train/measurement.hpp"

namespace induct {

// Settings {lengths, samples, iterations, l2, nullspace_rounds, nullspace_margin}; the result
// {lengths: [{length, sequences, final_accuracy, final_chance, changed_position, pairs, hooks:
// [{name, probe, probe_chance, ablated_accuracy, nullspace_dims, nullspace_rounds,
// nullspace_probe, nullspace_accuracy, random_accuracy, patch_changed, patch_readout}],
// convs: [{name, ablated_accuracy, patch}]}]}: hooks the layers' points in the order the forward
// pass reaches them (the nullspace keys with nullspace_rounds > 0); convs, for a model with
// inner points "<layer>.conv" (a block's causal convolution), that convolution's output set to
// its mean per position, and the share of the clean-corrupted gap recovered by patching its
// clean output in at every position.
YAML::Node measure_probe(const MeasureContext& context, const YAML::Node& settings);

}  // namespace induct
