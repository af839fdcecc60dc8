// The probe measurement's records as the stored outcome's YAML: the one place that writes and
// reads them (core/probe/measure.hpp). Torch-free.
#include <cmath>

#include "options_yaml.hpp"
#include "probe/measure.hpp"

namespace induct {

using yaml::exact;

YAML::Node ProbeMeasureSettings::to_yaml() const {
  YAML::Node node;
  for (int length : lengths) node["lengths"].push_back(length);
  node["samples"] = samples;
  node["iterations"] = fit.iterations;
  node["l2"] = exact(fit.l2);
  node["nullspace_rounds"] = nullspace_rounds;
  node["nullspace_margin"] = exact(nullspace_margin);
  node["version"] = kVersion;
  return node;
}

ProbeMeasureSettings ProbeMeasureSettings::from_yaml(const YAML::Node& node) {
  ProbeMeasureSettings s;
  for (const auto& length : node["lengths"]) s.lengths.push_back(length.as<int>());
  s.samples = node["samples"].as<uint64_t>();
  s.fit.iterations = node["iterations"].as<int64_t>();
  s.fit.l2 = node["l2"].as<double>();
  s.nullspace_rounds = node["nullspace_rounds"].as<int64_t>(0);
  s.nullspace_margin = node["nullspace_margin"].as<double>(s.nullspace_margin);
  return s;
}

YAML::Node ProbeMeasurement::to_yaml() const {
  YAML::Node out(YAML::NodeType::Sequence);
  for (const LengthMeasurement& l : lengths) {
    YAML::Node entry;
    entry["length"] = l.length;
    entry["sequences"] = l.sequences;
    if (!l.probed) {
      entry["hooks"] = YAML::Node(YAML::NodeType::Sequence);
      out.push_back(entry);
      continue;
    }
    entry["final_accuracy"] = exact(l.final_accuracy);
    entry["final_chance"] = exact(l.final_chance);
    entry["changed_position"] = l.changed_position;
    entry["pairs"] = l.pairs;
    YAML::Node hooks(YAML::NodeType::Sequence);
    for (const HookMeasurement& h : l.hooks) {
      YAML::Node node;
      node["name"] = h.name;
      node["probe"] = exact(h.probe);
      node["probe_accuracy"] = exact(h.probe_accuracy);
      node["probe_chance"] = exact(h.probe_chance);
      node["ablated_accuracy"] = exact(h.ablated_accuracy);
      if (h.nullspace) {
        node["nullspace_dims"] = h.nullspace->dims;
        node["nullspace_rounds"] = h.nullspace->rounds;
        node["nullspace_probe"] = exact(h.nullspace->probe);
        node["nullspace_accuracy"] = exact(h.nullspace->accuracy);
        node["random_accuracy"] = exact(h.nullspace->random_accuracy);
      }
      node["patch_changed"] = exact(h.patch_changed);
      node["patch_readout"] = exact(h.patch_readout);
      hooks.push_back(node);
    }
    entry["hooks"] = hooks;
    if (!l.convs.empty()) {
      YAML::Node convs(YAML::NodeType::Sequence);
      for (const ConvMeasurement& c : l.convs) {
        YAML::Node node;
        node["name"] = c.name;
        node["ablated_accuracy"] = exact(c.ablated_accuracy);
        node["patch"] = exact(c.patch);
        convs.push_back(node);
      }
      entry["convs"] = convs;
    }
    out.push_back(entry);
  }
  return out;
}

ProbeMeasurement ProbeMeasurement::from_yaml(const YAML::Node& lengths) {
  ProbeMeasurement out;
  for (const auto& entry : lengths) {
    LengthMeasurement l;
    l.length = entry["length"].as<int>();
    l.sequences = entry["sequences"].as<int64_t>();
    l.probed = static_cast<bool>(entry["final_accuracy"]);
    if (l.probed) {
      l.final_accuracy = entry["final_accuracy"].as<double>();
      l.final_chance = entry["final_chance"].as<double>();
      l.changed_position = entry["changed_position"].as<int64_t>(0);
      l.pairs = entry["pairs"].as<int64_t>(0);
    }
    for (const auto& node : entry["hooks"]) {
      HookMeasurement h;
      h.name = node["name"].as<std::string>();
      h.probe = node["probe"].as<double>();
      h.probe_accuracy = node["probe_accuracy"].as<double>(NAN);
      h.probe_chance = node["probe_chance"].as<double>();
      h.ablated_accuracy = node["ablated_accuracy"].as<double>();
      if (node["nullspace_accuracy"]) {
        HookMeasurement::Nullspace null;
        null.dims = node["nullspace_dims"].as<int64_t>();
        null.rounds = node["nullspace_rounds"].as<int64_t>();
        null.probe = node["nullspace_probe"].as<double>();
        null.accuracy = node["nullspace_accuracy"].as<double>();
        null.random_accuracy = node["random_accuracy"].as<double>();
        h.nullspace = null;
      }
      h.patch_changed = node["patch_changed"].as<double>();
      h.patch_readout = node["patch_readout"].as<double>();
      l.hooks.push_back(h);
    }
    for (const auto& node : entry["convs"]) {
      ConvMeasurement c;
      c.name = node["name"].as<std::string>();
      c.ablated_accuracy = node["ablated_accuracy"].as<double>();
      c.patch = node["patch"].as<double>();
      l.convs.push_back(c);
    }
    out.lengths.push_back(l);
  }
  return out;
}

}  // namespace induct
