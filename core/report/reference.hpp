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

// A metric published values may give: each study kind names those its report compares
// (study/registry.cpp hands the list to the reader).
struct ReferenceMetric {
  std::string name;  // as the CSV's metric column writes it: nstar, kappa, ...
  // kRatio: ours / published, marked beyond the reference's factor (counts, factors; a value
  // must be positive). kDifference: ours - published, marked beyond `tolerance` (accuracies;
  // any finite value).
  enum class Compare { kRatio, kDifference } compare = Compare::kRatio;
  double tolerance = 0;
};

struct ReferenceValue {
  std::string task, model, format;
  std::string distribution;  // empty: not stated, compared with every distribution
  int L = 0;
  std::map<std::string, std::string> options;  // "task.m" -> "2", "model.hidden" -> "256"
  std::string metric;                          // one of the reader's metrics
  std::optional<double> value;                 // empty: published as not learned
  std::string source;
  std::string where;  // FILE:LINE, for messages
};

struct Reference {
  std::string file;
  double factor = 2;  // a kRatio value off by more than this factor (either way) is marked
  std::vector<ReferenceValue> values;
  std::map<std::string, ReferenceMetric> metrics;  // by name: those the file may use

  // The published values of `metric` for a cell (its resolved task and model sections);
  // distribution "" matches any (kappa).
  std::vector<const ReferenceValue*> find(const std::string& metric, const YAML::Node& task,
                                          const YAML::Node& model, const std::string& format,
                                          const std::string& distribution, int L) const;
  // "12 Paper T1, x2 !" (kRatio) or "0.01 Paper T2, +0.03" (kDifference): the published value
  // beside ours, how ours compares, and "!" when they differ by more than the factor or the
  // tolerance, or one side is not learned.
  std::string compare(const std::vector<const ReferenceValue*>& published,
                      std::optional<double> ours) const;
  // Whether ours and a published value differ by more than the factor (the tolerance).
  bool differs(const ReferenceValue& published, std::optional<double> ours) const;
  const ReferenceMetric& metric_of(const ReferenceValue& value) const {
    return metrics.at(value.metric);
  }
};

// Reads FILE: a header naming columns, then rows. Columns: task, model, format, distribution
// (empty: any), L, metric (one of `metrics`), value (a number; empty or "-" or "–": not
// learned), source; any number of option columns `task.NAME` and `model.NAME` (an empty field
// does not constrain). A ConfigError naming FILE:LINE and the column on anything else.
Reference read_reference(const std::string& file, double factor,
                         const std::vector<ReferenceMetric>& metrics);

}  // namespace induct
