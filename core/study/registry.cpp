// The study kinds and the measurements they take after training: the one list of each.
// Adding a kind is a folder under core/study/ and a line here (docs/design.md).
#include <functional>
#include <utility>

#include "study/kind.hpp"
#include "study/study.hpp"
#include "train/measurement.hpp"

namespace induct {

// Defined in each kind's folder.
std::unique_ptr<Study> make_train_study();
std::unique_ptr<Study> make_nstar_study();
std::unique_ptr<Study> make_sharing_study();
std::unique_ptr<Study> make_lengthgen_study();
std::unique_ptr<Study> make_probe_study();
YAML::Node measure_lengthgen(const MeasureContext& context, const YAML::Node& settings);
YAML::Node measure_probe(const MeasureContext& context, const YAML::Node& settings);

namespace {

using Factory = std::unique_ptr<Study> (*)();

const std::vector<std::pair<std::string, Factory>>& kinds() {
  static const std::vector<std::pair<std::string, Factory>> list = {
      {"train", make_train_study},         {"nstar", make_nstar_study},
      {"sharing", make_sharing_study},     {"lengthgen", make_lengthgen_study},
      {"probe", make_probe_study},
  };
  return list;
}

}  // namespace

const std::vector<std::string>& study_kinds() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, factory] : kinds()) out.push_back(name);
    return out;
  }();
  return names;
}

std::shared_ptr<const Study> make_study(const std::string& kind, const Options& root) {
  for (const auto& [name, factory] : kinds())
    if (name == kind) {
      std::shared_ptr<Study> study = factory();
      study->read(root);
      return study;
    }
  return nullptr;
}

std::shared_ptr<const Study> make_study(const std::string& kind) {
  for (const auto& [name, factory] : kinds())
    if (name == kind) return factory();
  return nullptr;
}

std::vector<PreparedCell> Study::expand(const CellSpec& spec, const PluginRegistry& registry) const {
  return {prepare_cell(spec, registry)};
}

Measurement find_measurement(const std::string& name) {
  if (name == "lengthgen") return measure_lengthgen;
  if (name == "probe") return measure_probe;
  return nullptr;
}

}  // namespace induct
