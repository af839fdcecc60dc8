// Published values to compare with (`report: {reference: FILE}`, `induct report --reference`):
// a CSV in a long format, one published number per row (docs/store.md, "Published values").
// Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace induct {

struct ReferenceValue {
  std::string task, model, format, distribution;  // distribution empty for kappa
  int L = 0;
  std::map<std::string, std::string> options;  // "task.m" -> "2", "model.hidden" -> "256"
  std::string metric;                          // nstar | kappa
  std::optional<double> value;                 // empty: published as not learned
  std::string source;
  std::string where;  // FILE:LINE, for messages
};

struct Reference {
  std::string file;
  double factor = 2;  // a value off by more than this factor (either way) is marked
  std::vector<ReferenceValue> values;

  // The published values of `metric` for a cell (its resolved task and model sections);
  // distribution "" matches any (kappa).
  std::vector<const ReferenceValue*> find(const std::string& metric, const YAML::Node& task,
                                          const YAML::Node& model, const std::string& format,
                                          const std::string& distribution, int L) const;
  // "12 (Paper, Table 1), x2.00 !": the published value beside ours, the ratio ours/published,
  // and "!" when they differ by more than `factor` or one side is not learned.
  std::string compare(const std::vector<const ReferenceValue*>& published,
                      std::optional<double> ours) const;
  // Whether ours and a published value differ by more than the factor.
  bool differs(const ReferenceValue& published, std::optional<double> ours) const;
};

// Reads FILE: a header naming columns, then rows. Columns: task, model, format, distribution
// (nstar), L, metric (nstar or kappa), value (a number; empty or "-" or "–": not learned),
// source; any number of option columns `task.NAME` and `model.NAME` (an empty field does not
// constrain). A ConfigError naming FILE:LINE and the column on anything else.
Reference read_reference(const std::string& file, double factor);

}  // namespace induct
