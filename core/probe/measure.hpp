// The probe measurement (docs/method.md section 7a): what the `probe` study (core/study/probe)
// reads off a trained model at every hook point, run in the coordinator from a checkpoint. Its
// settings and its result are typed records; to_yaml and from_yaml are the one place that writes
// and reads them as the stored outcome's YAML (the settings are part of the outcome's key).
// Torch-free header.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probe/settings.hpp"
#include "train/measurement.hpp"

namespace induct {

// What is measured: at each length, `samples` fresh sequences (half fit the probes, half test).
struct ProbeMeasureSettings {
  // The version of the measurement, stored in the settings so that an outcome measured by an
  // earlier version is measured again: 2, recurrent hook points carry an edit to the next step
  // (induct::hooked_recurrence); 3, a block's convolution is measured (convs).
  static constexpr int64_t kVersion = 3;

  std::vector<int> lengths;
  uint64_t samples = 400;
  ProbeSettings fit;               // iterations, l2 of each linear probe
  int64_t nullspace_rounds = 32;   // iterative nullspace projection: at most this many probes
  double nullspace_margin = 0.02;  // ... until one is within this of chance (0 rounds: off)

  // {lengths, samples, iterations, l2, nullspace_rounds, nullspace_margin, version}.
  YAML::Node to_yaml() const;
  static ProbeMeasureSettings from_yaml(const YAML::Node& node);
};

// One hook point (a layer's output, in the order the forward pass reaches them). Accuracies are
// raw (not normalized); `probe` is the probe's accuracy above its chance (0 = majority class).
struct HookMeasurement {
  std::string name;
  double probe = 0, probe_accuracy = 0, probe_chance = 0;
  double ablated_accuracy = 0;  // the model's, the probe's directions set to their mean
  // The whole readable subspace removed (iterative nullspace projection), and the control: a
  // random subspace of its dimension. Absent when nullspace_rounds is 0.
  struct Nullspace {
    int64_t dims = 0, rounds = 0;
    double probe = 0;  // the last probe's accuracy above chance after the removal
    double accuracy = 0, random_accuracy = 0;
  };
  std::optional<Nullspace> nullspace;
  // The share of the clean-corrupted logit gap recovered by patching the clean activation in,
  // at the changed action's position and at the readout.
  double patch_changed = 0, patch_readout = 0;
};

// A block's causal convolution (the inner hook point "<block>.conv"): the model's accuracy with
// its output set to its mean per position, and the gap share its clean output carries.
struct ConvMeasurement {
  std::string name;
  double ablated_accuracy = 0, patch = 0;
};

struct LengthMeasurement {
  int length = 0;
  int64_t sequences = 0;
  // False for a length with a single sequence: nothing is held out, nothing measured below.
  bool probed = false;
  double final_accuracy = 0, final_chance = 0;  // the model's, on the held-out half
  int64_t changed_position = 0;                 // the action changed in the corrupted twins
  int64_t pairs = 0;                            // clean/corrupted pairs patched
  std::vector<HookMeasurement> hooks;
  std::vector<ConvMeasurement> convs;  // models that mark their convolutions only
};

struct ProbeMeasurement {
  std::vector<LengthMeasurement> lengths;

  // The outcome's `lengths`: [{length, sequences, final_accuracy, final_chance,
  // changed_position, pairs, hooks: [{name, probe, probe_accuracy, probe_chance,
  // ablated_accuracy, nullspace_dims, nullspace_rounds, nullspace_probe, nullspace_accuracy,
  // random_accuracy, patch_changed, patch_readout}], convs: [{name, ablated_accuracy,
  // patch}]}], the nullspace keys only where measured, convs only where the model has them.
  YAML::Node to_yaml() const;
  static ProbeMeasurement from_yaml(const YAML::Node& lengths);
};

// Measures the model of `context` (its checkpoint loaded) at each of the settings' lengths;
// `context.check_stop` runs between hook points.
ProbeMeasurement measure_probe(const MeasureContext& context, const ProbeMeasureSettings& settings);

}  // namespace induct
