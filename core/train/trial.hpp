// One training of one (cell, N, learning rate, seed): what it is and what came of it.
// Both travel between the coordinator and worker processes as YAML. Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "data/dataset.hpp"
#include "train/settings.hpp"

namespace induct {

// A cell with every option resolved (defaults filled in): self-contained and canonical.
struct Cell {
  YAML::Node task;   // resolved `task:` section, with its name
  YAML::Node model;  // resolved `model:` section, with its name
  // Resolved `format:` section: its name alone when the format read no options (so "outcome"
  // keys the same as before formats had options), else a map with its name.
  YAML::Node format;
  std::string distribution;
  int L = 0;
  ValidationPolicy validation;
  uint64_t n_cap = 0;

  std::string task_name() const { return task["name"].as<std::string>(); }
  std::string model_name() const { return model["name"].as<std::string>(); }
  std::string format_name() const;
  std::string format_label() const;  // format_label(format)
  YAML::Node to_yaml() const;
  static Cell from_yaml(const YAML::Node& node);
};

// A YAML map with value semantics. Copies of a YAML::Node share one node, and assigning to one
// of them changes them all; a YamlMap's copies are deep, so specs and results copy safely.
class YamlMap {
 public:
  YamlMap() = default;
  explicit YamlMap(const YAML::Node& node) : node_(YAML::Clone(node)) {
    if (!node_.IsMap()) throw YAML::Exception(YAML::Mark::null_mark(), "expected a map");
  }
  YamlMap(const YamlMap& other) : node_(YAML::Clone(other.node_)) {}
  YamlMap& operator=(const YamlMap& other) {
    node_.reset(YAML::Clone(other.node_));
    return *this;
  }
  bool empty() const { return node_.size() == 0; }
  bool has(const std::string& key) const { return static_cast<bool>(node_[key]); }
  YAML::Node get(const std::string& key) const { return node_[key]; }
  void set(const std::string& key, const YAML::Node& value) { node_[key] = YAML::Clone(value); }
  YAML::Node clone() const { return YAML::Clone(node_); }

 private:
  YAML::Node node_{YAML::NodeType::Map};
};

// "outcome", "code_trace(every=4)": a resolved format in labels, tables and the store.
std::string format_label(const YAML::Node& format);

struct TrialSpec {
  Cell cell;
  uint64_t n = 0;
  double lr = 0;
  uint64_t seed = 0;
  TrainSettings training;
  int64_t max_length = 0;  // longest sequence the model must accept
  std::string device = "cpu";
  std::vector<std::string> plugin_path;
  std::string plugin_versions;  // "task:modular=1.0.0 model:lstm=1.0.0": part of the key
  // Measurements after training (train/measurement.hpp): a map from each measurement's name to
  // its settings, part of the key (empty: none, the key of a plain training).
  YamlMap measurements;
  // Where to save the trained model (checkpoint_path), for studies that read trained models
  // again; empty: not saved. A path, so not part of the key.
  std::string checkpoint_dir;
  // Where the training keeps its state to go on from (run.state_every, run.keep_states;
  // docs/store.md): DIR/<trajectory key>.pt. Empty: no state. Paths and policies, not in the key.
  std::string state_dir;
  int64_t state_every = 0;  // save at the first evaluation at least this many steps after the last
  std::string keep_states;  // a failed training's final state: "stopped" (by the detector),
                            // "failed", "none"

  YAML::Node to_yaml() const;
  static TrialSpec from_yaml(const YAML::Node& node);
  // The store key: a hash of everything that decides the result (not device or paths).
  std::string key() const;
  YAML::Node identity() const;
  // What decides the training's path step by step: the identity without the step limit, the
  // failure detector and the measurements. Trials of one trajectory differ only in where they
  // stop, so one can go on from another's saved state (train/trainer.hpp, StateFile).
  std::string trajectory_key() const;
  // state_dir/<trajectory key>.pt ("" without a state_dir), and its removal: for a training
  // cancelled because another configuration decided its step, which nothing will run again.
  std::string state_path() const;
  void discard_state() const;
  // "lr=0.001 seed=10": the configuration of the grid, as progress lines and tables name it.
  std::string configuration() const;
};

struct LengthMetrics {
  int length = 0;
  int64_t count = 0;
  double loss = 0;            // teacher forcing
  double token_accuracy = 0;  // CoT in length generalization: greedy decoding
  double final_accuracy = 0;  // CoT in length generalization: greedy decoding
};

struct EvalMetrics {
  int64_t count = 0;
  double loss = 0;            // mean cross-entropy over supervised positions
  double token_accuracy = 0;  // over supervised positions
  double final_accuracy = 0;  // final state, per sequence
  std::vector<LengthMetrics> per_length;
};

struct EvalPoint {
  int64_t step = 0;
  double train_loss = 0;  // mean over the steps since the previous evaluation
  double val_loss = 0;
};

enum class TrialStatus { kSucceeded, kFailed, kDiverged, kCancelled, kError };
const char* to_string(TrialStatus status);
TrialStatus trial_status_from(const std::string& text);

struct TrialResult {
  TrialStatus status = TrialStatus::kError;
  int64_t steps = 0;
  double best_loss = 0;                // best validation loss over all evaluations
  EvalMetrics last;                    // at the last evaluation
  bool validated_on_training = false;  // the validation set was empty (tiny spaces)
  bool stalled = false;                // failed early: the failure detector stopped it
  std::string stopped_by;              // with stalled: the rule (stalled, memorised, plateau)
  double chance_loss = 0;              // the cell's chance loss (the detector's plateau)
  double seconds = 0;  // of training, over every part when it went on from a saved state
  int64_t resumed_at =
      0;  // the step of the saved state it went on from (StateFile); 0: from the start
  std::vector<EvalPoint> history;
  YamlMap measurements;  // name -> result, one per TrialSpec::measurements
  std::string error;

  bool succeeded() const { return status == TrialStatus::kSucceeded; }
  // The steps this training ran itself: those after the saved state it went on from (the ones
  // before were counted where they ran). `steps` stays the total of the trajectory.
  int64_t trained_steps() const { return steps - std::min(resumed_at, steps); }
  // Succeeded, failed or diverged: a result. Cancelled and error rows are records, run again.
  bool finished() const {
    return status == TrialStatus::kSucceeded || status == TrialStatus::kFailed ||
           status == TrialStatus::kDiverged;
  }
  // A trial that never ran to its end: cancelled, or stopped by an error.
  static TrialResult cancelled();
  static TrialResult failure(const std::string& message);
  YAML::Node to_yaml() const;
  static TrialResult from_yaml(const YAML::Node& node);
};

// Per-length metrics as YAML rows [length, count, loss, token accuracy, final accuracy].
YAML::Node to_yaml(const std::vector<LengthMetrics>& rows);
std::vector<LengthMetrics> length_metrics_from(const YAML::Node& node);

// "modular(m=5)": a resolved task or model section as its name and options; with `only`,
// just the options named there ("lstm(hidden=768)").
std::string component_label(const YAML::Node& section, const std::set<std::string>* only = nullptr);

// "modular(m=5) lstm(hidden=256) acot uniform L=10": a cell in tables and progress lines.
std::string cell_label(const Cell& cell);

// "none", or the failure detector's settings: "window 200, improvement 0.1, projection 2, ...".
std::string describe_detector(const TrainSettings& settings);

// The training settings as YAML (canonical: part of trial and outcome keys).
YAML::Node to_yaml(const TrainSettings& settings);

}  // namespace induct
