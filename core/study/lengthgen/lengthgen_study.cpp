// The `lengthgen` study (docs/method.md section 7): train at N (N_max by default), then read the
// accuracy of its best configurations (lengthgen.configurations) on longer sequences.
#include <algorithm>
#include <cmath>
#include <optional>
#include <ostream>
#include <set>
#include <tuple>

#include "options_yaml.hpp"
#include "report/certificates.hpp"
#include "report/context.hpp"
#include "report/reports.hpp"
#include "store/store.hpp"
#include "study/kind.hpp"
#include "study/step.hpp"
#include "train/generalization.hpp"
#include "train/measurement.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

// After training, final-state accuracy on sequences of round(multiple x L) actions.
struct LengthGenSettings {
  LengthMultiples lengths{"lengthgen", "multiples", {1, 1.5, 2, 3, 4}};  // 1: the trained maximum
  double report_multiple = 2;  // the column of the paper's Table 2
  uint64_t samples = 500;      // sequences per evaluated length
  int64_t configurations = 3;  // read per cell: the best finished ones of the step
};

class LengthGenStudy final : public Study {
 public:
  void read(const Options& root) override;
  CellKeys cell_keys() const override { return {true, CellKeys::N::kMaxByDefault}; }
  void check_cell(const Options& root, const CellSpec& cell) const override {
    settings_.lengths.check(root, cell.L);
  }
  // The model must take the longest evaluated sequence.
  std::vector<PreparedCell> expand(const CellSpec& spec,
                                   const PluginRegistry& registry) const override {
    return {settings_.lengths.prepare(spec, registry)};
  }
  int run(StudyRun& run, const std::vector<PreparedCell>& cells) const override;
  void report(ReportContext& report) const override;

 private:
  LengthGenSettings settings_;
};

void LengthGenStudy::read(const Options& root) {
  const Options section = root.section("lengthgen");
  LengthGenSettings& s = settings_;
  s.lengths.read(root);
  const std::vector<double>& multiples = s.lengths.multiples;
  s.report_multiple = section.get<double>("report_multiple", s.report_multiple);
  s.samples = section.get<unsigned long>("samples", s.samples);
  if (std::find(multiples.begin(), multiples.end(), s.report_multiple) == multiples.end())
    section.fail("report_multiple", "must be one of the multiples");
  if (s.samples < 1) section.fail("samples", "must be at least 1");
  s.configurations = get_in_range(section, "configurations", s.configurations, 1, 10'000);
}

int LengthGenStudy::run(StudyRun& run, const std::vector<PreparedCell>& cells) const {
  const StudyConfig& config = run.config;
  Table table;
  table.header = {"cell", "N", "analysed"};
  size_t errors = 0;
  for (size_t c = 0; c < cells.size(); ++c) {
    const PreparedCell& cell = cells[c];
    const uint64_t n = training_size(config, cell);
    const std::vector<int> lengths = settings_.lengths.lengths(cell.cell.L);
    const std::string context = cell_context(config, c, cells.size(), cell.label);
    YAML::Node measurement;
    for (int length : lengths) measurement["lengths"].push_back(length);
    measurement["samples"] = settings_.samples;
    StepOptions options;
    // One configuration: the step ends at its first success; several: every one trains.
    options.first_success = settings_.configurations == 1;
    options.measurements.set("lengthgen", measurement);
    options.checkpoints = StepOptions::Checkpoints::kSave;
    StepResult step = run_step(run, cell, n, options, context + " N=" + std::to_string(n));
    run.progress.clear();
    errors += step.errors;
    std::vector<size_t> ranked = ranked_configurations(
        step, [&](size_t i) { return step.results[i].measurements.has("lengthgen"); });
    std::vector<std::string> row{cell.label, format_count(n)};
    if (ranked.empty()) {
      run.progress.log(context + ": no configuration finished (errors); rerun to retry");
      row.push_back("error");
      table.rows.push_back(row);
      continue;
    }
    if (ranked.size() > static_cast<size_t>(settings_.configurations))
      ranked.resize(static_cast<size_t>(settings_.configurations));
    // Each analysed configuration its own outcome; the table's row: their mean and range over
    // those that succeeded (over all when none did).
    std::vector<bool> succeeded;
    std::vector<double> accuracy;
    for (size_t i : ranked) {
      succeeded.push_back(step.results[i].succeeded());
      accuracy.push_back(step.results[i].last.final_accuracy);
    }
    const Counted counted = counted_configurations(succeeded, accuracy, config.report.min_accuracy);
    std::map<size_t, std::vector<double>> at_length;  // index into lengths -> normalized values
    for (size_t r = 0; r < ranked.size(); ++r) {
      const size_t chosen = ranked[r];
      const TrialSpec& spec = step.trials[chosen];
      const TrialResult& result = step.results[chosen];
      const std::vector<LengthMetrics> curve =
          length_metrics_from(result.measurements.get("lengthgen"));
      YAML::Node value;
      value["cell"] = cell.cell.to_yaml();
      value["plugins"] = cell.plugin_versions;
      value["n"] = n;
      value["lr"] = yaml::exact(spec.lr);
      value["seed"] = spec.seed;
      value["status"] = to_string(result.status);
      value["best_loss"] = yaml::exact(result.best_loss);
      // The analysed model (the final weights): its validation loss and final-state accuracy.
      value["final_loss"] = yaml::exact(result.last.loss);
      value["final_accuracy"] = yaml::exact(result.last.final_accuracy);
      value["states"] = cell.num_states;
      value["report_length"] =
          static_cast<int>(std::lround(settings_.report_multiple * cell.cell.L));
      value["settings"] = measurement;
      std::string line =
          context + ": " + spec.configuration() + " (" + to_string(result.status) + ")";
      for (size_t k = 0; k < curve.size(); ++k) {
        const LengthMetrics& m = curve[k];
        const double normalized = normalized_accuracy(m.final_accuracy, cell.num_states);
        YAML::Node point(YAML::NodeType::Sequence);
        point.SetStyle(YAML::EmitterStyle::Flow);
        point.push_back(m.length);
        point.push_back(m.count);
        point.push_back(yaml::exact(m.final_accuracy));
        point.push_back(yaml::exact(normalized));
        point.push_back(yaml::exact(m.token_accuracy));
        value["curve"].push_back(point);
        line += ", " + std::to_string(m.length) + ": " + format_fraction(normalized);
        if (counted.counted[r]) at_length[k].push_back(normalized);
      }
      run.progress.log(line);
      run.store.put_outcome({content_key("lengthgen " + spec.key() + " " + yaml::flow(measurement)),
                             config.name, "lengthgen", cell.label, value, ""});
    }
    row.push_back(counted.text);
    // Table columns: the normalized accuracy at each length, as "2L" etc.
    for (const auto& [k, values] : at_length) {
      const std::string column = multiple_label(lengths[k], cell.cell.L);
      auto at = std::find(table.header.begin(), table.header.end(), column);
      if (at == table.header.end()) {
        table.header.push_back(column);
        at = table.header.end() - 1;
      }
      const size_t index = static_cast<size_t>(at - table.header.begin());
      if (row.size() <= index) row.resize(index + 1);
      row[index] = format_spread(values);
    }
    table.rows.push_back(row);
  }
  run.out << "\nnormalized final-state accuracy at multiples of L (0 = chance, 1 = perfect):\n"
          << table.text();
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name +
                            ": length generalization\n\nNormalized final-state "
                            "accuracy at multiples of L (0 = chance, 1 = perfect).\n\n" +
                            table.markdown());
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  return errors > 0 ? 1 : 0;
}

void LengthGenStudy::report(ReportContext& report) const {
  // Length generalization (Table 2) and accuracy against length, over the configurations each
  // cell read: the mean and range over those that succeeded, or over all, marked *, when none
  // did.
  Grid lengthgen;
  Table models;  // the models each row analysed
  models.header = {
      "model", "format",        "task",   "distribution",   "L",
      "N",     "configuration", "status", "final val loss", "final-state acc (validation)"};
  size_t unlearned = 0, none_counted = 0, representable = 0;
  const std::string threshold = format_number(report.min_accuracy, 3);
  Table curves;
  curves.header = {"model",
                   "format",
                   "task",
                   "distribution",
                   "L",
                   "lr",
                   "seed",
                   "status",
                   "length",
                   "sequences",
                   "final-state accuracy",
                   "normalized",
                   "token accuracy"};
  // One figure per task and format (a study of many models and tasks on one plot is a legend
  // over its curves), in the tables' order.
  std::map<std::tuple<int, int, std::string, std::string>, Figure> lengthgen_figures;
  for (const auto& [label, outcomes] : report.latest_per_configuration("lengthgen")) {
    const YAML::Node cell = outcomes.front()->value["cell"];
    const RowKey row = report.row_of(cell["task"], cell["model"], format_label(cell["format"]));
    const std::string distribution = cell["distribution"].as<std::string>();
    const int L = cell["L"].as<int>();
    const int report_length = outcomes.front()->value["report_length"].as<int>();
    Figure& f = lengthgen_figures[{row.task_rank, row.format_rank, row.task, row.format}];
    f.stem = "lengthgen_" + safe(row.task) + "_" + safe(row.format);
    f.title = "Length generalization: " + paper_task_name(cell["task"]) + ", " + row.format;
    f.xlabel = "length (multiples of the trained maximum L)";
    f.ylabel = "normalized final-state accuracy (mean)";
    f.extra = "set yrange [-0.2:1.1]\nset key below\n";  // outside: clear of every curve
    const Counted counted = counted_configurations(outcomes, report.min_accuracy);
    const bool learned = counted.learned;
    unlearned += !learned && counted.any();
    none_counted += !counted.any();
    Figure::Series s{model_legend(cell["model"], row.model) + ", " + distribution +
                         " L=" + std::to_string(L) + (learned ? "" : " (failed)"),
                     {},
                     false};
    const auto shown = [](const StoredOutcome* o, const char* key, bool fraction) {
      if (!o->value[key]) return std::string("-");  // stored before it was recorded
      const double v = o->value[key].as<double>();
      return fraction ? format_fraction(v) : format_number(v, 4);
    };
    std::map<int, std::vector<double>> normalized_at;  // length -> over the used outcomes
    for (size_t i = 0; i < outcomes.size(); ++i) {
      const StoredOutcome* o = outcomes[i];
      const std::string status = o->value["status"].as<std::string>("");
      const bool in_means = counted.counted[i];
      const bool below = counted.below[i];
      models.rows.push_back(
          {row.model, row.format, row.task, distribution, std::to_string(L),
           o->value["n"].as<std::string>(),
           "lr=" + format_number(o->value["lr"].as<double>(), 3) +
               " seed=" + o->value["seed"].as<std::string>(),
           status + (in_means ? ""
                     : below  ? " (below accuracy " + threshold + ", not in the means)"
                              : " (not in the means)"),
           shown(o, "final_loss", false), shown(o, "final_accuracy", true)});
      for (const auto& point : o->value["curve"]) {
        const int length = point[0].as<int>();
        const double normalized = point[3].as<double>();
        curves.rows.push_back({row.model, row.format, row.task, distribution, std::to_string(L),
                               format_number(o->value["lr"].as<double>(), 3),
                               o->value["seed"].as<std::string>(), status, std::to_string(length),
                               point[1].as<std::string>(), format_fraction(point[2].as<double>()),
                               format_fraction(normalized),
                               format_fraction(point[4].as<double>())});
        if (in_means) normalized_at[length].push_back(normalized);
      }
    }
    const ColumnKey column{rank_of(kDistributionOrder, distribution), L, distribution};
    // Not learned although a certificate says the model can represent the task.
    const bool can =
        !learned &&
        !certificate_for(cell["model"], cell["task"], format_label(cell["format"])).empty();
    representable += can;
    const std::string can_mark = can ? " (" + kRepresentableMark + ")" : "";
    if (!counted.any()) {  // no model to summarise: no curve, a dash in the table
      lengthgen.cells[row][column] = "–" + can_mark;
      continue;
    }
    for (const auto& [length, values] : normalized_at) {
      s.points.push_back({static_cast<double>(length) / L, mean_of_finite(values)});
      if (length == report_length) {
        // The paper's Table 2 column is 2L: published values compare there only.
        const double mean = mean_of_finite(values);
        const std::string published =
            report_length == 2 * L
                ? report.compared(label, "lengthgen_normalized_accuracy_2L", cell["task"],
                                  cell["model"], format_label(cell["format"]), distribution, L,
                                  std::isfinite(mean) ? std::optional<double>(mean) : std::nullopt)
                : "";
        lengthgen.cells[row][column] =
            format_spread(values) + (learned ? "" : "*") + can_mark + published;
      }
    }
    f.series.push_back(s);
  }
  // The published values' legend, without the blank line it ends with ("" without them).
  std::string legend = reference_legend(report);
  legend.erase(legend.find_last_not_of('\n') + 1);
  if (!lengthgen.cells.empty()) {
    report.write_table(
        "lengthgen_table", "Length generalization at 2L (Table 2 layout)",
        "Normalized final-state accuracy (acc - 1/S) / (1 - 1/S): 0 is chance, 1 perfect; "
        "CoT decodes greedily. Each cell reads its best configurations "
        "(lengthgen.configurations: the best finished ones by final validation loss, successes "
        "first; lengthgen_models lists them): the mean over those that succeeded, with the range "
        "(lowest to highest) in brackets where they differ" +
            std::string(unlearned ? "; * no configuration succeeded in-distribution: the mean "
                                    "over all of them, not a learned solution's"
                                  : "") +
            (report.min_accuracy > 0
                 ? "; a configuration whose final-state accuracy on the validation set is below " +
                       threshold + " (report.min_accuracy) is left out of the mean" +
                       (none_counted ? std::string(" (–: none reaches it)") : std::string())
                 : std::string()) +
            (representable ? "; " + kRepresentableLegend : std::string()) + "." +
            (legend.empty() ? std::string() : "\n\n" + legend),
        lengthgen.table());
    report.write_table(
        "lengthgen_models", "The models length generalization analysed",
        "Each configuration a cell read: its status, and its final weights' (the "
        "analysed ones) validation loss and final-state accuracy; one that did not "
        "succeed beside one that did" +
            (report.min_accuracy > 0 ? ", or whose accuracy is below " + threshold + ","
                                     : std::string()) +
            " is not in the means.",
        models);
    write_file_atomically((report.dir / "lengthgen_curves.csv").string(), curves.csv());
    report.index.push_back("- [every evaluated length](lengthgen_curves.csv)");
  }
  for (auto& [which, f] : lengthgen_figures) {
    if (f.series.empty()) continue;  // no cell of this format had a model to summarise
    distinguish_series(f);
    f.extra +=
        "set arrow from graph 0, first 0 to graph 1, first 0 nohead dashtype 3 lc 'gray40'\n";
    report.figures.push_back(f);
  }
}

}  // namespace

std::unique_ptr<Study> make_lengthgen_study() { return std::make_unique<LengthGenStudy>(); }

// A lengthgen outcome keeps its curve, one row per evaluated length, in `curves`; it exports
// as lengthgen.csv.
OutcomeTables lengthgen_outcome_tables() {
  OutcomeTables t;
  t.kind = "lengthgen";
  t.schema = R"sql(
CREATE TABLE IF NOT EXISTS curves (
  outcome             TEXT NOT NULL,  -- outcomes.key (kind lengthgen)
  length              INTEGER NOT NULL,
  sequences           INTEGER,
  final_accuracy      REAL,
  normalized_accuracy REAL,
  token_accuracy      REAL,
  PRIMARY KEY (outcome, length)
) WITHOUT ROWID;
)sql";
  t.tables = {"curves"};
  t.write = [](const YAML::Node& value, OutcomeWriter& out) {
    for (const auto& point : value["curve"])  // [length, sequences, final, normalized, token]
      out.insert(
          "curves",
          {Store::Value::of(point[0].as<int64_t>()), Store::Value::of(point[1].as<int64_t>()),
           Store::Value::of(point[2].as<double>()), Store::Value::of(point[3].as<double>()),
           point.size() > 4 ? Store::Value::of(point[4].as<double>()) : Store::Value{}});
  };
  t.exports = {{"lengthgen", "one evaluated length of a length-generalization curve",
                "SELECT c.outcome, o.study, o.label, o.cell_key, {cell}, o.format, "
                "o.distribution, o.L, o.n AS N, o.lr, o.seed, c.length, c.sequences, "
                "c.final_accuracy, c.normalized_accuracy, c.token_accuracy, o.created FROM "
                "curves c JOIN outcomes o ON o.key = c.outcome ORDER BY o.rowid, c.length"}};
  return t;
}

}  // namespace induct
