// How fast a cell trains here: what `induct validate --time` measures.
#pragma once

#include <cstdint>
#include <string>

#include "config/study_config.hpp"
#include "plugin/registry.hpp"
#include "study/prepare.hpp"

namespace induct {

// Optimisation steps per second of one configuration of the cell trained here, as a worker
// trains it (at N = min(N, 640), so at full batches where N_max allows; the first learning
// rate and seed; this process's threads): the difference of two short runs, so that building
// the data and the final evaluation cancel out (Short-to-Long at that N trains on its shortest
// sequences). NaN when the runs give no difference (a configuration that diverges at once).
struct StepRate {
  uint64_t n = 0;  // the training-set size it was measured at
  double per_second = 0;
};
StepRate measure_step_rate(const StudyConfig& study, const PreparedCell& cell,
                           const PluginRegistry& registry);
// What decides that rate, as text (`validate --time` times each distinct one once): the
// model, the format, the length profile (the distribution, the training set's longest length and
// its mean within 10%) and the training-set size it is timed at. Not the task's vocabulary, which
// changes the embedding and output layers only.
std::string step_shape(const StudyConfig& study, const PreparedCell& cell,
                       const PluginRegistry& registry);

}  // namespace induct
