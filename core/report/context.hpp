// What a study kind's report (Study::report) is given: the store's outcomes, the paper's row
// and column order, and where its tables and figures go. Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "report/reference.hpp"
#include "store/store.hpp"
#include "util/table.hpp"

namespace induct {

// The paper's orders of formats and distributions; others after them.
extern const std::vector<std::string> kFormatOrder;
extern const std::vector<std::string> kDistributionOrder;
int rank_of(const std::vector<std::string>& order, const std::string& value);

// A row of the paper's tables: model / format / task, in order of first appearance (formats
// in the paper's order).
struct RowKey {
  int model_rank, format_rank, task_rank;
  std::string model, format, task;
  bool operator<(const RowKey& o) const {
    return std::tie(model_rank, format_rank, task_rank) <
           std::tie(o.model_rank, o.format_rank, o.task_rank);
  }
};

struct ColumnKey {
  int distribution_rank, L;
  std::string distribution;
  bool operator<(const ColumnKey& o) const {
    return std::tie(distribution_rank, L) < std::tie(o.distribution_rank, o.L);
  }
  std::string title() const { return distribution + " L=" + std::to_string(L); }
};

// Rows x columns of strings, rendered as a table with "" where a row has no value.
struct Grid {
  std::map<RowKey, std::map<ColumnKey, std::string>> cells;
  Table table() const;
};

// One figure: data blocks written to a .dat file, a gnuplot script, PNG and SVG.
struct Figure {
  std::string stem, title, xlabel, ylabel, y2label;
  bool logy = false;
  std::string extra;  // further gnuplot settings
  struct Series {
    std::string title;
    std::vector<std::pair<double, double>> points;
    bool y2 = false;
    std::string style = "linespoints";  // gnuplot's "with ..." of the series
  };
  std::vector<Series> series;
};

// Gives each series of `f` its own point type, dash and point size (lines with points), so that
// identical curves show as overlapping, not as one.
void distinguish_series(Figure& f);

struct ReportContext;
// The legend of compared() marks, with the reference file and factor ("" without a reference).
std::string reference_legend(const ReportContext& report);

// A task as the paper names it in figures: parity (Z_2), Z_m, S_m; other tasks by their label.
std::string paper_task_name(const YAML::Node& task);

// A model as figure legends name it: its name and sizes ("lstm 256", "gpt2 2L d64", "mamba 2L
// d64"): hidden, layers and d_model where the model has them.
std::string model_legend(const YAML::Node& model);
// The same, and the options that tell the cell's model from others in its column (the "(...)"
// of its row label, RowKey::model), so that two models of one kind differ in a figure's key.
std::string model_legend(const YAML::Node& model, const std::string& row_model);

// A file-name-safe form of a label: every character but [A-Za-z0-9_-] as '_'.
std::string safe(std::string s);

struct ReportContext {
  std::filesystem::path dir;
  std::vector<StoredOutcome> outcomes;  // every outcome, in the order stored
  std::vector<StoredTrial> trials;      // every trial, in the order stored
  // The row of a cell's task, model and format (model labels name only the options that tell
  // models apart within a column).
  std::function<RowKey(const YAML::Node& task, const YAML::Node& model, const std::string& format)>
      row_of;
  const Reference* reference = nullptr;  // published values to compare with (or none)
  // Kinds that read trained models (lengthgen, probe) leave configurations below this final-state
  // accuracy out of their summaries (report.min_accuracy; counted_configurations).
  double min_accuracy = 0;
  // Every comparison with a published value the kinds made: the comparison table.
  struct Comparison {
    std::string label, metric;
    std::optional<double> ours;  // empty: not learned
    const ReferenceValue* published;
  };
  std::vector<Comparison> comparisons;
  std::vector<std::string> index;  // report.md's lines
  std::vector<Figure> figures;     // drawn after every kind has reported

  // The latest outcome of `kind` per cell label, in label order (a rerun with other settings
  // replaces the row).
  std::vector<const StoredOutcome*> latest(const std::string& kind) const;
  // The outcomes of `kind` that each read one configuration (`lr`, `seed`), by cell label: those
  // with the `settings` of the cell's latest outcome, the latest per configuration, ordered by
  // configuration (probe and lengthgen read several configurations of a cell).
  std::map<std::string, std::vector<const StoredOutcome*>> latest_per_configuration(
      const std::string& kind) const;
  // The note under a kind's table: the settings its numbers come from (max_steps, epsilon,
  // learning rates, seeds, detector, certify: from each outcome's `settings`), and the stored
  // outcomes of the same cells under other settings that the table does not show (it shows the
  // latest of each cell). "" when the outcomes record no settings. `value_text`: what such an
  // outcome found, shown before its settings ("N* 24"; "" shows nothing).
  std::string settings_note(
      const std::string& kind,
      const std::function<std::string(const YAML::Node& value)>& value_text = {}) const;
  // " [12 Paper T1, x2 !]": the published values of a cell's metric for a table cell ("" without
  // a reference or a published value), each recorded in `comparisons`.
  std::string compared(const std::string& label, const std::string& metric, const YAML::Node& task,
                       const YAML::Node& model, const std::string& format,
                       const std::string& distribution, int L, std::optional<double> ours);
  // DIR/stem.{md,csv}, listed in the index.
  void write_table(const std::string& stem, const std::string& title, const std::string& note,
                   const Table& table);
};

}  // namespace induct
