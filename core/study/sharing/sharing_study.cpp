// The `sharing` study (docs/method.md section 6): N*_n of Fixed n for n = 2..max L and N*_joint
// of Uniform 2..L, searched as the nstar study does, and kappa(L) = sum N*_n / N*_joint.
#include <algorithm>
#include <limits>
#include <ostream>

#include "options_yaml.hpp"
#include "report/context.hpp"
#include "report/reports.hpp"
#include "store/store.hpp"
#include "study/kind.hpp"
#include "study/nstar/marks.hpp"
#include "study/search_runner.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

class SharingStudy final : public Study {
 public:
  void read(const Options& root) override;
  // The study sets the distribution and L of every cell it searches.
  CellKeys cell_keys() const override { return {false, CellKeys::N::kNone}; }
  std::vector<PreparedCell> expand(const CellSpec& spec,
                                   const PluginRegistry& registry) const override;
  size_t sizes_per_cell() const override { return static_cast<size_t>(search_.max_steps); }
  int run(StudyRun& run, const std::vector<PreparedCell>& cells) const override;
  void report(ReportContext& report) const override;

 private:
  SearchSettings search_;
  std::vector<int> lengths_{2, 3, 4, 5, 6, 7, 8, 9, 10};  // the L of each kappa(L)
};

void SharingStudy::read(const Options& root) {
  search_ = read_search(root.section("search"));
  Options sharing = root.section("sharing");
  auto lengths =
      sharing.get_list<long>("lengths", std::vector<long>(lengths_.begin(), lengths_.end()));
  lengths_.clear();
  for (long L : lengths) {
    if (L < 2) sharing.fail("lengths", "every L must be at least 2");
    if (L > kMaxLength)
      sharing.fail("lengths", "every L must be at most " + std::to_string(kMaxLength));
    if (std::count(lengths_.begin(), lengths_.end(), L))
      sharing.fail("lengths", "L = " + std::to_string(L) + " is listed twice");
    lengths_.push_back(static_cast<int>(L));
  }
  if (lengths_.empty()) sharing.fail("lengths", "must not be empty");
}

std::vector<PreparedCell> SharingStudy::expand(const CellSpec& spec,
                                               const PluginRegistry& registry) const {
  // N*_n with Fixed at each n in 2..max L, N*_joint with Uniform at each L (L = 2 is the
  // Fixed cell: Uniform over {2} is the same data).
  std::vector<PreparedCell> cells;
  const int max_L = *std::max_element(lengths_.begin(), lengths_.end());
  for (int n = 2; n <= max_L; ++n) {
    CellSpec fixed = spec;
    fixed.distribution = "fixed";
    fixed.L = n;
    cells.push_back(prepare_cell(fixed, registry));
  }
  for (int L : lengths_) {
    if (L == 2) continue;
    CellSpec joint = spec;
    joint.distribution = "uniform";
    joint.L = L;
    cells.push_back(prepare_cell(joint, registry));
  }
  return cells;
}

int SharingStudy::run(StudyRun& run, const std::vector<PreparedCell>& cells) const {
  const StudyConfig& config = run.config;
  const int max_L = *std::max_element(lengths_.begin(), lengths_.end());
  size_t per_base = static_cast<size_t>(max_L - 1);
  for (int L : lengths_) per_base += L != 2;
  Table table;
  table.header = {"cell", "L", "sum N*_n", "N*_joint", "kappa"};
  size_t incomplete = 0, uncertified = 0;
  const std::vector<SearchRecord> searches = run_searches(run, cells, search_);
  for (const auto& s : searches) incomplete += !s.complete;
  for (size_t base = 0; base * per_base < cells.size(); ++base) {
    const PreparedCell* group = &cells[base * per_base];
    const SearchRecord* records = &searches[base * per_base];
    // N*_n for n = 2..max L (Fixed), in order, then the Uniform cells of the L != 2.
    const SearchRecord* fixed = records;
    const Cell& first = group[0].cell;
    const std::string base_label = group[0].label.substr(0, group[0].label.rfind(" fixed"));
    YAML::Node value;
    value["task"] = first.task;
    value["model"] = first.model;
    value["format"] = first.format_label();
    value["settings"] = nstar_settings(config, search_);
    value["lengths"] = YAML::Node(YAML::NodeType::Sequence);
    size_t joint_index = static_cast<size_t>(max_L - 1);
    bool complete = true;
    for (int L : lengths_) {
      const SearchRecord& joint = L == 2 ? fixed[0] : records[joint_index++];
      bool all_learned = joint.learned && joint.complete;
      bool sum_certified = true;
      uint64_t sum = 0;
      for (int n = 2; n <= L; ++n) {
        all_learned = all_learned && fixed[n - 2].learned && fixed[n - 2].complete;
        sum_certified = sum_certified && fixed[n - 2].certified;
        sum += fixed[n - 2].nstar;
      }
      complete = complete && joint.complete;
      for (int n = 2; n <= L; ++n) complete = complete && fixed[n - 2].complete;
      YAML::Node row;
      row["L"] = L;
      row["sum_fixed"] = sum;
      row["joint"] = joint.nstar;
      row["learned"] = all_learned;
      const bool certified = sum_certified && joint.certified;
      row["certified"] = certified;
      uncertified += !certified;
      const double kappa = all_learned ? static_cast<double>(sum) / joint.nstar : 0;
      row["kappa"] = yaml::exact(kappa);
      value["lengths"].push_back(row);
      table.rows.push_back({base_label, std::to_string(L),
                            all_learned ? format_nstar(true, sum, sum_certified) : kNotLearned,
                            format_nstar(joint.learned, joint.nstar, joint.certified),
                            all_learned ? format_number(kappa, 3) : kNotLearned});
    }
    if (complete) {
      YAML::Node identity;
      identity["kind"] = "sharing";
      for (int n = 0; n < static_cast<int>(per_base); ++n)
        identity["cells"].push_back(nstar_key(config, search_, group[n]));
      run.store.put_outcome(
          {content_key(yaml::flow(identity)), config.name, "sharing", base_label, value, ""});
    }
  }
  // kappa of upper bounds is no bound: the marks on its terms say which it rests on.
  const std::string legend = uncertified ? "\n" + kNstarLegend + ".\n" : "";
  run.out << "\n" << table.text() << legend;
  write_file_atomically(
      (run.out_dir / (config.name + ".md")).string(),
      "# " + config.name + ": sharing factor kappa\n\n" + table.markdown() + legend);
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  return incomplete > 0 ? 1 : 0;
}

void SharingStudy::report(ReportContext& report) const {
  // kappa (Figures 6-7), and kappa(L) of every model of a (format, task) on one plot.
  Grid kappa;
  std::map<std::tuple<int, int, std::string, std::string>, Figure> kappa_compared;
  for (const StoredOutcome* o : report.latest("sharing")) {
    const RowKey row =
        report.row_of(o->value["task"], o->value["model"], o->value["format"].as<std::string>());
    // The lengths run, and room below N* = 1 (log scale) so that it is not on the axis.
    int lowest = std::numeric_limits<int>::max(), highest = 0;
    for (const auto& entry : o->value["lengths"]) {
      lowest = std::min(lowest, entry["L"].as<int>());
      highest = std::max(highest, entry["L"].as<int>());
    }
    const std::string x_range = "set xtics 1\nset xrange [" + std::to_string(lowest) +
                                "-0.5:" + std::to_string(highest) + "+0.5]\n";
    Figure f{
        "kappa_" + safe(row.model) + "_" + safe(row.format) + "_" + safe(row.task),
        "Sharing: " + model_legend(o->value["model"], row.model) + ", " + row.format + ", " +
            paper_task_name(o->value["task"]),
        "L",
        "training sequences",
        "kappa",
        true,
        x_range +
            "set yrange [0.5:*]\n"
            // kappa = 1 on its own axis: isolated per-length solutions.
            "set arrow from graph 0, second 1 to graph 1, second 1 nohead dashtype 3 lc 'gray40'\n",
        {}};
    Figure::Series sum{
        "sum of N*_n (Fixed, n = 2..L)", {}, false, "linespoints lw 2 pointsize 1.5 pointtype 7"},
        joint{"N*_joint (Uniform 2..L)", {}, false, "linespoints lw 2 pointsize 1.5 pointtype 5"},
        k{"kappa", {}, true, "linespoints lw 2 pointsize 1.5 pointtype 9"};
    for (const auto& entry : o->value["lengths"]) {
      const int L = entry["L"].as<int>();
      const bool learned = entry["learned"].as<bool>();
      const double value = entry["kappa"].as<double>();
      kappa.cells[row][{0, L, "kappa"}] =
          (learned ? format_number(value, 3) : kNotLearned) +
          report.compared(o->label + " L=" + std::to_string(L), "kappa", o->value["task"],
                          o->value["model"], o->value["format"].as<std::string>(), "", L,
                          learned ? std::optional<double>(value) : std::nullopt);
      // N*_joint where it was learned, even when kappa is not defined (a Fixed length was not).
      if (entry["joint"].as<double>() > 0)
        joint.points.push_back({double(L), entry["joint"].as<double>()});
      if (learned) {
        sum.points.push_back({double(L), entry["sum_fixed"].as<double>()});
        k.points.push_back({double(L), value});
      }
    }
    f.series = {sum, joint, k};
    if (!k.points.empty() || !joint.points.empty()) report.figures.push_back(f);
    Figure& compared = kappa_compared[{row.format_rank, row.task_rank, row.format, row.task}];
    if (compared.stem.empty())
      compared = {
          "kappa_" + safe(row.format) + "_" + safe(row.task),
          "Sharing factor kappa(L): " + row.format + ", " + paper_task_name(o->value["task"]),
          "L",
          "kappa",
          "",
          true,
          x_range +
              // kappa = 1: isolated per-length solutions; above, sharing; below, interference.
              "set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 3 lc 'gray40'\n",
          {}};
    if (!k.points.empty())
      compared.series.push_back({model_legend(o->value["model"], row.model), k.points, false});
  }
  // Worth a figure of its own only when it compares.
  for (auto& [which, f] : kappa_compared) {
    if (f.series.size() < 2) continue;
    distinguish_series(f);
    report.figures.push_back(f);
  }
  if (!kappa.cells.empty())
    report.write_table(
        "kappa_table", "Sharing factor kappa(L) = sum N*_n / N*_joint(L)",
        "kappa >> 1: lengths share one mechanism; about 1: isolated per-length solutions; "
        "< 1: interference. " +
            kNotLearned + ": some N* not learned.\n\n" + reference_legend(report) +
            report.settings_note("sharing"),
        kappa.table());
}

}  // namespace

std::unique_ptr<Study> make_sharing_study() { return std::make_unique<SharingStudy>(); }

// A sharing outcome keeps one row per length L in `kappas`; it exports as kappa.csv.
OutcomeTables sharing_outcome_tables() {
  OutcomeTables t;
  t.kind = "sharing";
  t.schema = R"sql(
CREATE TABLE IF NOT EXISTS kappas (
  outcome   TEXT NOT NULL,  -- outcomes.key (kind sharing)
  L         INTEGER NOT NULL,
  sum_fixed INTEGER,
  joint     INTEGER,
  learned   INTEGER,
  certified INTEGER,
  kappa     REAL,           -- NULL when a term is not learned
  PRIMARY KEY (outcome, L)
) WITHOUT ROWID;
)sql";
  t.tables = {"kappas"};
  t.write = [](const YAML::Node& value, OutcomeWriter& out) {
    // An N* of 0 is "not learned": NULL, as the outcomes' nstar.
    const auto count_or_null = [](int64_t n) {
      return n > 0 ? Store::Value::of(n) : Store::Value{};
    };
    for (const auto& row : value["lengths"]) {
      const bool learned = row["learned"].as<bool>();
      out.insert(
          "kappas",
          {Store::Value::of(row["L"].as<int64_t>()), count_or_null(row["sum_fixed"].as<int64_t>()),
           count_or_null(row["joint"].as<int64_t>()), Store::Value::of(int64_t{learned}),
           Store::Value::of(int64_t{row["certified"].as<bool>(true)}),
           learned ? Store::Value::of(row["kappa"].as<double>()) : Store::Value{}});
    }
  };
  t.exports = {{"kappa", "one length L of a sharing factor",
                "SELECT k.outcome, o.study, o.label, {cell}, o.format, k.L, k.sum_fixed, "
                "k.joint AS nstar_joint, k.learned, k.certified, k.kappa, o.max_steps, "
                "o.epsilon, o.created FROM kappas k JOIN outcomes o ON o.key = k.outcome "
                "ORDER BY o.rowid, k.L"}};
  return t;
}

}  // namespace induct
