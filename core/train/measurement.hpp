// Measurements: what a study reads off a trained model in the worker, after training and
// before the model is dropped (length generalization, probes). Each is named, takes YAML (its
// settings, part of the trial's key: TrialSpec::measurements) and gives YAML (stored with the
// result: TrialResult::measurements), so the generic trial knows none of them.
#pragma once

#include <c10/core/Device.h>  // not torch/types.h: exec/pool.hpp includes this header
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <string>

#include "train/trial.hpp"

namespace induct {

class SequenceModel;  // induct/model.hpp
struct CellData;      // train/cell_setup.hpp

struct MeasureContext {
  SequenceModel& model;  // trained, in eval mode for the measurement's duration
  const CellData& cell;
  const TrialSpec& spec;
  c10::Device device;
  // Called between a long measurement's parts; throws to end it (the coordinator's stop
  // signal, when the coordinator measures). Empty: nothing to check (a worker).
  std::function<void()> check_stop = nullptr;
};

using Measurement = YAML::Node (*)(const MeasureContext& context, const YAML::Node& settings);

// The measurements a trial may name, by name. The study layer's registry (one row per kind,
// core/study/registry.cpp) hands them to whoever runs trials: the worker's entry point, the
// in-process runner.
struct Measurements {
  std::map<std::string, Measurement> by_name;
  Measurement find(const std::string& name) const {
    auto found = by_name.find(name);
    return found == by_name.end() ? nullptr : found->second;
  }
};

}  // namespace induct
