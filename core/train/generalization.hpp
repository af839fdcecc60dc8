// Length generalization (docs/method.md section 7): accuracy on fresh sequences longer than any
// trained one.
#pragma once

#include <torch/types.h>

#include "induct/model.hpp"
#include "train/cell_setup.hpp"
#include "train/measurement.hpp"

namespace induct {

// For each length n: min(samples, A^n) distinct sequences of n actions drawn from a stream
// seeded by (seed, n), then the teacher-forced loss and, for the final state and the token
// accuracy, the model's own predictions: Outcome and ACoT read position n; CoT decodes the
// n states greedily after SEP (no teacher forcing) and reads the last one.
std::vector<LengthMetrics> evaluate_generalization(SequenceModel& model, const CellData& cell,
                                                   const std::vector<int>& lengths,
                                                   uint64_t samples, uint64_t seed,
                                                   int64_t batch_size, torch::Device device);

// Settings {lengths: [...], samples: N}; the result is one row per length
// (train/trial.hpp's LengthMetrics rows).
YAML::Node measure_lengthgen(const MeasureContext& context, const YAML::Node& settings);

// (accuracy - chance) / (1 - chance): 0 at chance, 1 when perfect (0 when chance is 1).
double above_chance(double accuracy, double chance);
// above_chance with chance 1/S: uniform over S states.
double normalized_accuracy(double accuracy, int64_t states);

}  // namespace induct
