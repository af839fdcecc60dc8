// Measurements: what a study reads off a trained model in the worker, after training and
// before the model is dropped (length generalization, probes). Each is named, takes YAML (its
// settings, part of the trial's key: TrialSpec::measurements) and gives YAML (stored with the
// result: TrialResult::measurements), so the generic trial knows none of them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include <torch/types.h>

#include "induct/model.hpp"
#include "train/components.hpp"
#include "train/trial.hpp"

namespace induct {

struct MeasureContext {
  SequenceModel& model;  // trained, in eval mode for the measurement's duration
  const CellData& cell;
  const TrialSpec& spec;
  torch::Device device;
};

using Measurement = YAML::Node (*)(const MeasureContext& context, const YAML::Node& settings);

// The measurement called `name` (core/study/registry.cpp lists them); nullptr if none.
Measurement find_measurement(const std::string& name);

}  // namespace induct
