// `induct sample`: a cell's sequences as the model sees them, so that a task's and a format's
// layout can be checked by eye or against another implementation's generator.
#pragma once

#include <cstdint>
#include <string>

#include "config/study_config.hpp"
#include "plugin/registry.hpp"
#include "study/prepare.hpp"

namespace induct {

struct SampleOptions {
  enum class Split { kTrain, kValidation } split = SampleOptions::Split::kTrain;
  uint64_t count = 5;  // sequences shown (at most the set's size)
  uint64_t seed = 0;   // the configuration's seed: the same sets its trials train on
  bool jsonl = false;  // one JSON object per sequence instead of aligned text
};

// The first `count` sequences of the cell's training set at its N (the set a trial with that
// seed trains on, in its order) or of its validation set: per sequence its actions and
// states, the tokens by name, the targets where they are scored, and where the final state is
// read (text), or the same as JSON lines.
std::string sample_cell(const StudyConfig& config, const PluginRegistry& registry,
                        const PreparedCell& cell, const SampleOptions& options);

}  // namespace induct
