// Cells prepared before anything trains: options resolved and checked against the plugins,
// models built once, data planned; and the lengths the studies that read trained models use.
#pragma once

#include <string>
#include <vector>

#include "config/study_config.hpp"
#include "data/dataset.hpp"
#include "plugin/registry.hpp"
#include "train/trial.hpp"

namespace induct {

// A cell checked against its plugins: options resolved, task tabulated, model built once
// and its output shape checked, data sizes planned.
struct PreparedCell {
  Cell cell;
  std::string label;  // e.g. "modular(m=5) lstm acot uniform L=10"
  int64_t num_actions = 0;
  int64_t num_states = 0;
  int64_t vocab_size = 0;
  int64_t max_length = 0;  // tokens
  int64_t parameters = 0;
  bool action_positions = false;  // the format says where each action's token is (probe)
  uint64_t n = 0;                 // kinds that read N (CellKeys::n): N (0: N_max)
  DataPlan plan;
  std::string plugin_versions;
  std::string key() const;  // hash of the resolved cell and plugin versions
};

// Reads the task, model and data sections of one cell (unknown keys in them are errors),
// builds the model once for sequences of up to `max_actions` actions (0: L).
PreparedCell prepare_cell(const CellSpec& spec, const PluginRegistry& registry,
                          int max_actions = 0);

// Every cell a study will train, prepared (Study::expand: a sharing study's Fixed and Uniform
// cells included), in order: checks the whole study before anything runs.
std::vector<PreparedCell> prepare_study(const StudyConfig& study, const PluginRegistry& registry);

// The training-set size of a cell of a kind that reads N (N, or N_max for "max"); a ConfigError
// naming the cell when it exceeds N_max or the cell has nothing to train on.
uint64_t training_size(const StudyConfig& study, const PreparedCell& cell);

// The lengths a study reads trained models at (lengthgen, probe): round(m x L) for each
// multiple m of a cell's L, from the list `key` of the study's section.
struct LengthMultiples {
  std::string section, key;  // "lengthgen", "multiples": where they are read, for errors
  std::vector<double> multiples;
  // Reads the list (not empty, every multiple >= 1; `multiples` is the default).
  void read(const Options& root);
  std::vector<int> lengths(int L) const;  // sorted, distinct
  // A ConfigError at section.key when a length at L would exceed kMaxLength.
  void check(const Options& root, int L) const;
  // The cell, its model built for the longest length.
  PreparedCell prepare(const CellSpec& spec, const PluginRegistry& registry) const;
};
// "x2", "x1.5": a length as a multiple of L, as tables and figures name it.
std::string multiple_label(int length, int L);

// "[study] cell 3/12 <label>": how progress lines name a cell.
std::string cell_context(const StudyConfig& study, size_t index, size_t count,
                         const std::string& label);

std::string describe_cell(const PreparedCell& cell);

}  // namespace induct
