// The study kinds: one row each, with everything a kind brings (its name, its factory, the
// measurements its trials take in the worker, the tables it stores and exports). Adding a kind is a
// folder under core/study/ and a row here (docs/design.md).
#include "study/registry.hpp"

#include <utility>

#include "study/kind.hpp"
#include "study/prepare.hpp"
#include "train/generalization.hpp"

namespace induct {

// Defined in each kind's folder.
std::unique_ptr<Study> make_train_study();
std::unique_ptr<Study> make_nstar_study();
std::unique_ptr<Study> make_sharing_study();
std::unique_ptr<Study> make_lengthgen_study();
std::unique_ptr<Study> make_probe_study();
OutcomeTables nstar_outcome_tables();
OutcomeTables sharing_outcome_tables();
OutcomeTables lengthgen_outcome_tables();
OutcomeTables probe_outcome_tables();

namespace {

struct Kind {
  std::string name;
  std::unique_ptr<Study> (*make)();
  std::vector<std::pair<std::string, Measurement>> measurements;  // by the name trials use
  OutcomeTables (*tables)();                       // nullptr: its outcomes keep only their row
  std::vector<ReferenceMetric> reference_metrics;  // published values its report compares
};

using Compare = ReferenceMetric::Compare;

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> table = {
      {"train", make_train_study, {}, nullptr, {}},
      {"nstar", make_nstar_study, {}, nstar_outcome_tables, {{"nstar", Compare::kRatio, 0}}},
      {"sharing", make_sharing_study, {}, sharing_outcome_tables, {{"kappa", Compare::kRatio, 0}}},
      {"lengthgen",
       make_lengthgen_study,
       {{"lengthgen", measure_lengthgen}},
       lengthgen_outcome_tables,
       // Table 2: normalized final-state accuracy at 2L; off by more than 0.1 is marked.
       {{"lengthgen_normalized_accuracy_2L", Compare::kDifference, 0.1}}},
      // Probes are measured by the coordinator, not in the worker.
      {"probe", make_probe_study, {}, probe_outcome_tables, {}},
  };
  return table;
}

const Kind* find_kind(const std::string& name) {
  for (const Kind& kind : kinds())
    if (kind.name == name) return &kind;
  return nullptr;
}

}  // namespace

const std::vector<std::string>& study_kinds() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Kind& kind : kinds()) out.push_back(kind.name);
    return out;
  }();
  return names;
}

const Measurements& study_measurements() {
  static const Measurements all = [] {
    Measurements out;
    for (const Kind& kind : kinds())
      for (const auto& [name, measure] : kind.measurements) out.by_name.emplace(name, measure);
    return out;
  }();
  return all;
}

std::vector<OutcomeTables> study_outcome_tables() {
  std::vector<OutcomeTables> out;
  for (const Kind& kind : kinds())
    if (kind.tables) out.push_back(kind.tables());
  return out;
}

std::vector<ReferenceMetric> study_reference_metrics() {
  std::vector<ReferenceMetric> out;
  for (const Kind& kind : kinds())
    out.insert(out.end(), kind.reference_metrics.begin(), kind.reference_metrics.end());
  return out;
}

std::vector<KindReport> study_reports() {
  std::vector<KindReport> out;
  for (const Kind& kind : kinds()) {
    std::shared_ptr<const Study> study = kind.make();
    out.push_back({kind.name, [study](ReportContext& context) { study->report(context); }});
  }
  return out;
}

namespace {

// The config reader reads what the core owns; the kind reads its own sections (before the
// reader refuses unknown keys) and checks each cell.
StudyConfig read_with_kind(const Options& root, const std::string& file,
                           const std::vector<std::string>& overrides) {
  const std::string name = read_study_kind(root, study_kinds());
  std::shared_ptr<Study> study = find_kind(name)->make();  // read_study_kind checked the name
  study->read(root);
  StudyConfig config = read_study(root, file, overrides, name, study->cell_keys());
  for (const CellSpec& cell : config.cells) study->check_cell(root, cell);
  config.study = std::move(study);
  return config;
}

}  // namespace

StudyConfig load_study(const std::string& file, const std::vector<std::string>& overrides) {
  return read_with_kind(read_study_document(file, overrides), file, overrides);
}

StudyConfig load_study_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides) {
  return read_with_kind(read_study_document_text(text, name, overrides), name, overrides);
}

std::vector<PreparedCell> Study::expand(const CellSpec& spec,
                                        const PluginRegistry& registry) const {
  return {prepare_cell(spec, registry)};
}

}  // namespace induct
