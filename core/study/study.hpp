// Studies: what `induct run` does with a study file (SPEC.md sections 4-7).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string>

#include "config/study_config.hpp"
#include "data/dataset.hpp"
#include "plugin/registry.hpp"
#include "store/store.hpp"
#include "study/progress.hpp"
#include "train/pool.hpp"
#include "train/trial.hpp"

namespace induct {

// A cell checked against its plugins: options resolved, task tabulated, model built once
// and its output shape checked, data sizes planned.
struct PreparedCell {
  Cell cell;
  int64_t num_actions = 0;
  int64_t num_states = 0;
  int64_t vocab_size = 0;
  int64_t max_length = 0;
  int64_t parameters = 0;
  DataPlan plan;
  std::string plugin_versions;
};

// Reads the task and model sections through their plugins (unknown keys in them are errors)
// and then rejects unknown keys anywhere in the study file.
PreparedCell prepare_cell(const StudyConfig& study, const PluginRegistry& registry);

TrialSpec make_trial(const StudyConfig& study, const PreparedCell& cell, uint64_t n, double lr,
                     uint64_t seed);

// A human-readable summary of a prepared cell (for `induct validate` and run headers).
std::string describe_cell(const StudyConfig& study, const PreparedCell& cell);

struct StudyRun {
  const StudyConfig& config;
  const PluginRegistry& registry;
  Store& store;
  TrialRunner& runner;
  Progress& progress;
  std::filesystem::path out_dir;
  std::ostream& out;
};

// Runs the study; returns the process exit code (0: every trial ran; 1: some failed with an
// error). Trials already in the store are not run again.
int run_train_study(StudyRun& run, const PreparedCell& cell);

}  // namespace induct
