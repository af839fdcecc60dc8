#include "train/trial.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "options_yaml.hpp"
#include "util/hash.hpp"
#include "util/text.hpp"

namespace induct {

namespace {
using yaml::exact;

YAML::Node validation_yaml(const ValidationPolicy& v) {
  YAML::Node node;
  node["max_size"] = v.max_size;
  node["fraction"] = exact(v.fraction);
  return node;
}
}  // namespace

YAML::Node Cell::to_yaml() const {
  YAML::Node node;
  // Clones: assigning the cell's own nodes would merge their memory into every node made here,
  // and the cell's would grow with each call (keys computed thousands of times got quadratic).
  node["task"] = YAML::Clone(task);
  node["model"] = YAML::Clone(model);
  node["format"] = YAML::Clone(format);
  node["distribution"] = distribution;
  node["L"] = L;
  node["validation"] = validation_yaml(validation);
  node["n_cap"] = n_cap;
  return node;
}

Cell Cell::from_yaml(const YAML::Node& node) {
  Cell cell;
  cell.task = node["task"];
  cell.model = node["model"];
  cell.format = node["format"];
  cell.distribution = node["distribution"].as<std::string>();
  cell.L = node["L"].as<int>();
  cell.validation.max_size = node["validation"]["max_size"].as<uint64_t>();
  cell.validation.fraction = node["validation"]["fraction"].as<double>();
  cell.n_cap = node["n_cap"].as<uint64_t>();
  return cell;
}

std::string Cell::format_name() const {
  return format.IsMap() ? format["name"].as<std::string>() : format.as<std::string>();
}

std::string Cell::format_label() const { return induct::format_label(format); }

std::string format_label(const YAML::Node& format) {
  return format.IsMap() ? component_label(format) : format.as<std::string>();
}

std::string cell_label(const Cell& cell) {
  return component_label(cell.task) + " " + component_label(cell.model) + " " +
         cell.format_label() + " " + cell.distribution + " L=" + std::to_string(cell.L);
}

std::string component_label(const YAML::Node& section, const std::set<std::string>* only) {
  std::string label = section["name"].as<std::string>(), options;
  for (const auto& entry : section) {
    const std::string key = entry.first.as<std::string>();
    if (key == "name" || (only && !only->count(key))) continue;
    const YAML::Node& value = entry.second;
    // A table (a list of rows: a Cayley table) by its shape; the cell's key still has it all.
    const bool table = value.IsSequence() && value.size() > 0 && value[0].IsSequence();
    // A file (Options::get_file: an absolute path and its digest) by its name and the digest's
    // first 8 digits.
    std::string text = table ? std::to_string(value.size()) + "x" + std::to_string(value[0].size())
                             : yaml::flow(value);
    if (value.IsScalar() && text.rfind('/', 0) == 0) text = text.substr(text.rfind('/') + 1);
    if (value.IsScalar() && key.size() > 7 && key.compare(key.size() - 7, 7, "_digest") == 0)
      text = text.substr(0, 8);
    options += (options.empty() ? "" : ",") + key + "=" + text;
  }
  return options.empty() ? label : label + "(" + options + ")";
}

std::string TrialSpec::configuration() const {
  return "lr=" + format_number(lr, 3) + " seed=" + std::to_string(seed);
}

const char* to_string(TrainSettings::PlateauLevel level) {
  return level == TrainSettings::PlateauLevel::kTask ? "task" : "validation";
}

TrainSettings::PlateauLevel plateau_level_from(const std::string& text) {
  if (text == "task") return TrainSettings::PlateauLevel::kTask;
  if (text == "validation") return TrainSettings::PlateauLevel::kValidation;
  throw std::invalid_argument("unknown plateau level '" + text + "' (task, validation)");
}

std::string describe_detector(const TrainSettings& t) {
  if (t.stall_window <= 0) return "none";
  std::string text = "window " + std::to_string(t.stall_window) + ", improvement " +
                     format_number(t.stall_improvement);
  if (t.stall_projection > 0) text += ", projection " + format_number(t.stall_projection);
  if (t.stall_fraction > 0) text += ", fraction " + format_number(t.stall_fraction);
  text += ", plateau margin " + format_number(t.plateau_margin);
  if (t.plateau_level != TrainSettings::PlateauLevel::kTask)
    text += std::string(" of the ") + to_string(t.plateau_level) + " set's chance loss";
  if (t.plateau_patience > 0) text += ", plateau patience " + std::to_string(t.plateau_patience);
  if (t.memorised_loss > 0) text += ", memorised below " + format_number(t.memorised_loss);
  return text;
}

YAML::Node to_yaml(const TrainSettings& t) {
  YAML::Node node;
  node["batch_size"] = t.batch_size;
  node["max_steps"] = t.max_steps;
  node["eval_every"] = t.eval_every;
  node["eval_batch_size"] = t.eval_batch_size;
  node["epsilon"] = exact(t.epsilon);
  node["curriculum"] = t.curriculum;
  // Only when on, so that keys of trials without a detector are unchanged.
  if (t.stall_window > 0) {
    node["stall_window"] = t.stall_window;
    node["stall_improvement"] = exact(t.stall_improvement);
    if (t.stall_projection > 0) node["stall_projection"] = exact(t.stall_projection);
    if (t.stall_fraction > 0) node["stall_fraction"] = exact(t.stall_fraction);
    node["plateau_margin"] = exact(t.plateau_margin);
    // Only the task's level: trials stored before it existed measured the validation set's.
    if (t.plateau_level == TrainSettings::PlateauLevel::kTask) node["plateau_level"] = "task";
    if (t.plateau_patience > 0) node["plateau_patience"] = t.plateau_patience;
    if (t.memorised_loss > 0) node["memorised_loss"] = exact(t.memorised_loss);
  }
  return node;
}

// What decides the result (the key hashes exactly this, in this order).
YAML::Node TrialSpec::identity() const {
  YAML::Node node;
  node["cell"] = cell.to_yaml();
  node["n"] = n;
  node["lr"] = exact(lr);
  node["seed"] = seed;
  node["training"] = induct::to_yaml(training);
  node["max_length"] = max_length;
  node["plugins"] = plugin_versions;
  if (!measurements.empty()) node["measurements"] = measurements.clone();
  return node;
}

YAML::Node TrialSpec::to_yaml() const {
  YAML::Node node = identity();
  node["device"] = device;
  for (const auto& p : plugin_path) node["plugin_path"].push_back(p);
  if (!checkpoint_dir.empty()) node["checkpoint_dir"] = checkpoint_dir;
  if (!state_dir.empty()) {
    node["state_dir"] = state_dir;
    node["state_every"] = state_every;
    node["keep_states"] = keep_states;
  }
  return node;
}

TrialSpec TrialSpec::from_yaml(const YAML::Node& node) {
  TrialSpec spec;
  spec.cell = Cell::from_yaml(node["cell"]);
  spec.n = node["n"].as<uint64_t>();
  spec.lr = node["lr"].as<double>();
  spec.seed = node["seed"].as<uint64_t>();
  const YAML::Node t = node["training"];
  spec.training.batch_size = t["batch_size"].as<int64_t>();
  spec.training.max_steps = t["max_steps"].as<int64_t>();
  spec.training.eval_every = t["eval_every"].as<int64_t>();
  spec.training.eval_batch_size = t["eval_batch_size"].as<int64_t>();
  spec.training.epsilon = t["epsilon"].as<double>();
  spec.training.curriculum = t["curriculum"].as<bool>();
  if (t["stall_window"]) {
    spec.training.stall_window = t["stall_window"].as<int64_t>();
    spec.training.stall_improvement = t["stall_improvement"].as<double>();
    if (t["stall_projection"]) spec.training.stall_projection = t["stall_projection"].as<double>();
    if (t["stall_fraction"]) spec.training.stall_fraction = t["stall_fraction"].as<double>();
    spec.training.plateau_margin = t["plateau_margin"].as<double>();
    spec.training.plateau_level =
        plateau_level_from(t["plateau_level"].as<std::string>("validation"));
    if (t["plateau_patience"]) spec.training.plateau_patience = t["plateau_patience"].as<int64_t>();
    if (t["memorised_loss"]) spec.training.memorised_loss = t["memorised_loss"].as<double>();
  }
  spec.max_length = node["max_length"].as<int64_t>();
  spec.device = node["device"].as<std::string>();
  if (node["plugin_path"])
    for (const auto& p : node["plugin_path"]) spec.plugin_path.push_back(p.as<std::string>());
  spec.plugin_versions = node["plugins"].as<std::string>();
  if (node["measurements"]) spec.measurements = YamlMap(node["measurements"]);
  if (node["checkpoint_dir"]) spec.checkpoint_dir = node["checkpoint_dir"].as<std::string>();
  if (node["state_dir"]) {
    spec.state_dir = node["state_dir"].as<std::string>();
    spec.state_every = node["state_every"].as<int64_t>();
    spec.keep_states = node["keep_states"].as<std::string>();
  }
  return spec;
}

std::string TrialSpec::key() const { return content_key(yaml::flow(identity())); }

std::string TrialSpec::trajectory_key() const {
  TrialSpec path = *this;
  path.training.max_steps = 0;
  path.training.stall_window = 0;  // to_yaml leaves out every detector setting then
  path.measurements = YamlMap();
  return content_key(yaml::flow(path.identity()));
}

std::string TrialSpec::state_path() const {
  return state_dir.empty() ? std::string() : state_dir + "/" + trajectory_key() + ".pt";
}

void TrialSpec::discard_state() const {
  std::error_code ignored;
  if (!state_dir.empty()) std::filesystem::remove(state_path(), ignored);
}

const char* to_string(TrialStatus status) {
  switch (status) {
    case TrialStatus::kSucceeded:
      return "succeeded";
    case TrialStatus::kFailed:
      return "failed";
    case TrialStatus::kDiverged:
      return "diverged";
    case TrialStatus::kCancelled:
      return "cancelled";
    case TrialStatus::kError:
      return "error";
  }
  return "error";
}

TrialStatus trial_status_from(const std::string& text) {
  for (auto s : {TrialStatus::kSucceeded, TrialStatus::kFailed, TrialStatus::kDiverged,
                 TrialStatus::kCancelled, TrialStatus::kError})
    if (text == to_string(s)) return s;
  throw std::invalid_argument("unknown trial status '" + text + "'");
}

TrialResult TrialResult::cancelled() {
  TrialResult r;
  r.status = TrialStatus::kCancelled;
  r.best_loss = std::numeric_limits<double>::infinity();
  return r;
}

TrialResult TrialResult::failure(const std::string& message) {
  TrialResult r;
  r.status = TrialStatus::kError;
  r.best_loss = std::numeric_limits<double>::infinity();
  r.error = message;
  return r;
}

YAML::Node to_yaml(const std::vector<LengthMetrics>& rows) {
  YAML::Node out(YAML::NodeType::Sequence);
  for (const auto& l : rows) {
    YAML::Node row(YAML::NodeType::Sequence);
    row.SetStyle(YAML::EmitterStyle::Flow);
    row.push_back(l.length);
    row.push_back(l.count);
    row.push_back(exact(l.loss));
    row.push_back(exact(l.token_accuracy));
    row.push_back(exact(l.final_accuracy));
    out.push_back(row);
  }
  return out;
}

std::vector<LengthMetrics> length_metrics_from(const YAML::Node& node) {
  std::vector<LengthMetrics> rows;
  if (node)
    for (const auto& row : node)
      rows.push_back({row[0].as<int>(), row[1].as<int64_t>(), row[2].as<double>(),
                      row[3].as<double>(), row[4].as<double>()});
  return rows;
}

YAML::Node TrialResult::to_yaml() const {
  YAML::Node node;
  node["status"] = to_string(status);
  node["steps"] = steps;
  node["best_loss"] = exact(best_loss);
  node["seconds"] = exact(seconds);
  if (resumed_at > 0) node["resumed_at"] = resumed_at;
  node["validated_on_training"] = validated_on_training;
  if (stalled) node["stalled"] = true;
  if (!stopped_by.empty()) node["stopped_by"] = stopped_by;
  if (chance_loss > 0) node["chance_loss"] = exact(chance_loss);
  node["error"] = error;
  YAML::Node metrics;
  metrics["count"] = last.count;
  metrics["loss"] = exact(last.loss);
  metrics["token_accuracy"] = exact(last.token_accuracy);
  metrics["final_accuracy"] = exact(last.final_accuracy);
  if (!last.per_length.empty()) metrics["per_length"] = induct::to_yaml(last.per_length);
  node["last"] = metrics;
  if (!measurements.empty()) node["measurements"] = measurements.clone();
  for (const auto& p : history) {
    YAML::Node row(YAML::NodeType::Sequence);
    row.SetStyle(YAML::EmitterStyle::Flow);
    row.push_back(p.step);
    row.push_back(exact(p.train_loss));
    row.push_back(exact(p.val_loss));
    node["history"].push_back(row);
  }
  return node;
}

TrialResult TrialResult::from_yaml(const YAML::Node& node) {
  TrialResult r;
  r.status = trial_status_from(node["status"].as<std::string>());
  r.steps = node["steps"].as<int64_t>();
  r.best_loss = node["best_loss"].as<double>();
  r.seconds = node["seconds"].as<double>();
  r.resumed_at = node["resumed_at"].as<int64_t>(0);
  r.validated_on_training = node["validated_on_training"].as<bool>();
  r.stalled = node["stalled"] && node["stalled"].as<bool>();
  r.stopped_by = node["stopped_by"].as<std::string>(r.stalled ? "stalled" : "");
  r.chance_loss = node["chance_loss"].as<double>(0);
  r.error = node["error"].as<std::string>("");
  const YAML::Node m = node["last"];
  r.last.count = m["count"].as<int64_t>();
  r.last.loss = m["loss"].as<double>();
  r.last.token_accuracy = m["token_accuracy"].as<double>();
  r.last.final_accuracy = m["final_accuracy"].as<double>();
  r.last.per_length = length_metrics_from(m["per_length"]);
  if (node["measurements"]) r.measurements = YamlMap(node["measurements"]);
  if (node["history"])
    for (const auto& row : node["history"])
      r.history.push_back({row[0].as<int64_t>(), row[1].as<double>(), row[2].as<double>()});
  return r;
}

}  // namespace induct
