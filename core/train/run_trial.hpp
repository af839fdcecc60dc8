// One whole trial, as a worker runs it.
#pragma once

#include "data/dataset.hpp"
#include "plugin/registry.hpp"
#include "train/trainer.hpp"
#include "train/trial.hpp"

namespace induct {

struct Measurements;  // train/measurement.hpp

// One whole trial: data, model, training, then the measurements the trial names (looked up in
// `measurements`; a name not there is an error). Errors are thrown (the worker reports them).
// With a cache, the data sets of earlier trials of the same (cell data, seed) are reused.
TrialResult run_trial(const TrialSpec& spec, const PluginRegistry& registry,
                      TrainObserver* observer = nullptr, SplitCache* cache = nullptr,
                      const Measurements* measurements = nullptr);

}  // namespace induct
