// The `nstar` study (docs/method.md section 5): each cell's N*, its search cost, and the paper's
// Table 1 and N*-against-L figures.
#include <cmath>
#include <limits>
#include <ostream>

#include "options_yaml.hpp"
#include "report/certificates.hpp"
#include "report/context.hpp"
#include "report/reports.hpp"
#include "store/store.hpp"
#include "study/kind.hpp"
#include "study/nstar/marks.hpp"
#include "study/nstar/not_learned.hpp"
#include "study/search_runner.hpp"
#include "util/files.hpp"
#include "util/hash.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace {

class NstarStudy final : public Study {
 public:
  void read(const Options& root) override { search_ = read_search(root.section("search")); }
  size_t sizes_per_cell() const override { return static_cast<size_t>(search_.max_steps); }
  int run(StudyRun& run, const std::vector<PreparedCell>& cells) const override;
  void report(ReportContext& report) const override;

 private:
  SearchSettings search_;
};

int NstarStudy::run(StudyRun& run, const std::vector<PreparedCell>& cells) const {
  const StudyConfig& config = run.config;
  // The N* table holds only what the search decides (the same after any resume); what it
  // cost depends on which trials ran before a success cancelled the rest, so it is a table of
  // its own.
  Table table, cost;
  table.header = {"cell", "N_max", "N*", "search steps"};
  cost.header = {"cell", "search steps", "trials trained now", "optimisation steps (all trials)"};
  size_t incomplete = 0, uncertified = 0, budget = 0, reasons = 0;
  const std::vector<SearchRecord> searches = run_searches(run, cells, search_);
  const std::vector<StoredTrial> stored = run.store.all();
  const TrialsByCell trials = trials_by_cell(stored);
  for (size_t c = 0; c < cells.size(); ++c) {
    const SearchRecord& s = searches[c];
    incomplete += !s.complete;
    uncertified += s.complete && !s.certified;
    std::string shown = !s.complete ? "?" : format_nstar(s.learned, s.nstar, s.certified);
    if (s.complete && !s.learned && s.certified)
      if (const auto outcome = run.store.find_outcome(nstar_key(config, search_, cells[c]))) {
        const NotLearned why = not_learned_reason(outcome->value, trials).why;
        budget += why == NotLearned::kBudget;
        if (!not_learned_mark(why).empty()) {
          shown += " (" + not_learned_mark(why) + ")";
          ++reasons;
        }
      }
    table.rows.push_back({cells[c].label, format_count(s.n_max), shown, std::to_string(s.steps)});
    cost.rows.push_back({cells[c].label, std::to_string(s.steps), std::to_string(s.trained),
                         std::to_string(s.optimisation_steps)});
  }
  const std::string legend = (uncertified ? "\n" + kNstarLegend + ".\n" : "") +
                             (reasons ? "\n" + kNotLearnedLegend + ".\n" : "");
  run.out << "\n" << table.text() << legend;
  write_file_atomically((run.out_dir / (config.name + "_cost.md")).string(),
                        "# " + config.name + ": search cost\n\n" + cost.markdown());
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name + ": N* per cell\n\n" + table.markdown() + legend);
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  if (budget > 0)
    run.out << budget
            << " cell(s) not learned for want of steps, not of data (" + kNotLearned +
                   " (budget)): raise training.max_steps (now "
            << config.training.max_steps << ") and run again"
            << (config.run.keep_states == "failed"
                    ? " (the failed trainings go on from their saved states)"
                    : " (with run.keep_states: failed, a failed training leaves its state and "
                      "a longer run goes on from it)")
            << "\n";
  return incomplete > 0 ? 1 : 0;
}

void NstarStudy::report(ReportContext& report) const {
  // N* (Table 1) and N* against L (Figures 2-5).
  Grid nstar;
  // One figure per (task, format, distribution), every model on it: N* where learned, a
  // marker at N_max where not, and the ceiling (the sequences available, N_max) as a line.
  struct NstarPlot {
    std::string task;  // as the paper names it
    // model -> L -> N* (NaN: not learned) and N_max; published values
    std::map<RowKey, std::map<int, std::pair<double, double>>> models;
    std::map<RowKey, std::vector<std::pair<double, double>>> published;
    std::map<RowKey, std::string> legend;  // model -> "lstm 256"
    std::map<int, double> ceiling;         // L -> N_max
  };
  std::map<std::tuple<int, int, int, std::string, std::string, std::string>, NstarPlot> nstar_plots;
  bool reasons = false;        // some not-learned cell says why
  bool representable = false;  // some not-learned cell's model can represent its task
  const TrialsByCell trials = trials_by_cell(report.trials);
  for (const StoredOutcome* o : report.latest("nstar")) {
    const YAML::Node cell = o->value["cell"];
    const RowKey row = report.row_of(cell["task"], cell["model"], format_label(cell["format"]));
    const std::string distribution = cell["distribution"].as<std::string>();
    const int L = cell["L"].as<int>();
    const bool learned = o->value["learned"].as<bool>();
    const auto n = o->value["nstar"].as<uint64_t>();
    std::string shown = format_nstar(learned, n, nstar_certified(o->value));
    if (!learned && nstar_certified(o->value)) {
      const std::string mark = not_learned_mark(not_learned_reason(o->value, trials).why);
      if (!mark.empty()) {
        shown += " (" + mark + ")";
        reasons = true;
      }
    }
    if (!learned &&
        !certificate_for(cell["model"], cell["task"], format_label(cell["format"])).empty()) {
      shown += " (" + kRepresentableMark + ")";
      representable = true;
    }
    shown += report.compared(
        o->label, "nstar", cell["task"], cell["model"], format_label(cell["format"]), distribution,
        L, learned ? std::optional<double>(static_cast<double>(n)) : std::nullopt);
    nstar.cells[row][{rank_of(kDistributionOrder, distribution), L, distribution}] = shown;
    NstarPlot& plot =
        nstar_plots[{row.task_rank, row.format_rank, rank_of(kDistributionOrder, distribution),
                     row.task, row.format, distribution}];
    const auto n_max = o->value["n_max"].as<double>(0);
    if (n_max > 0) plot.ceiling[L] = std::max(plot.ceiling[L], n_max);
    RowKey by_model = row;  // one line per model: the task and format are the figure's
    by_model.format_rank = by_model.task_rank = 0;
    by_model.format = by_model.task = "";
    plot.task = paper_task_name(cell["task"]);
    plot.models[by_model][L] = {learned ? static_cast<double>(n) : std::nan(""), n_max};
    plot.legend[by_model] = model_legend(cell["model"], row.model);
    if (report.reference)
      for (const ReferenceValue* r : report.reference->find(
               "nstar", cell["task"], cell["model"], format_label(cell["format"]), distribution, L))
        if (r->value) plot.published[by_model].push_back({static_cast<double>(L), *r->value});
  }
  if (!nstar.cells.empty())
    report.write_table(
        "nstar_table", "N*: minimal training-set size (Table 1 layout)",
        kNstarLegend + ".\n\n" + (reasons ? kNotLearnedLegend + ".\n\n" : "") +
            (representable ? kRepresentableLegend + ".\n\n" : "") + reference_legend(report) +
            report.settings_note("nstar",
                                 [](const YAML::Node& v) -> std::string {
                                   if (!v["learned"] || !v["nstar"]) return "";
                                   return "N* " + format_nstar(v["learned"].as<bool>(),
                                                               v["nstar"].as<uint64_t>(),
                                                               nstar_certified(v));
                                 }),
        nstar.table());

  // Search cost: every N* search in the store, in the order they ran (the same cell searched
  // with and without cancellation or the failure detector appears once per variant).
  Table cost;
  cost.header = {"cell",         "first success cancels", "failure detector",  "N*",
                 "search steps", "certification re-runs", "optimisation steps"};
  for (const StoredOutcome& o : report.outcomes) {
    if (o.kind != "nstar") continue;
    const YAML::Node& v = o.value;
    cost.rows.push_back(
        {o.label, v["cancel_on_success"] ? v["cancel_on_success"].as<std::string>() : "true",
         v["failure_detector"] ? v["failure_detector"].as<std::string>()
         : v["stall_window"] && v["stall_window"].as<int64_t>() > 0
             ? "window " + v["stall_window"].as<std::string>()
             : "none",
         format_nstar(v["learned"].as<bool>(), v["nstar"].as<uint64_t>(), nstar_certified(v)),
         std::to_string(v["steps"].size()),
         std::to_string(v["certification"] ? v["certification"].size() : 0),
         v["optimisation_steps"].as<std::string>()});
  }
  if (!cost.rows.empty())
    report.write_table(
        "search_cost", "Search cost: optimisation steps per N* search",
        "Every search in the store, in the order it ran. \"first success cancels\" false "
        "is the paper's procedure (every configuration to its own stop).",
        cost);
  for (auto& [which, plot] : nstar_plots) {
    const auto& [task_rank, format_rank, distribution_rank, task, format, distribution] = which;
    int lowest = std::numeric_limits<int>::max(), highest = 0;
    for (const auto& [L, n_max] : plot.ceiling) {
      lowest = std::min(lowest, L);
      highest = std::max(highest, L);
    }
    for (const auto& [model, points] : plot.models) {
      lowest = std::min(lowest, points.begin()->first);
      highest = std::max(highest, points.rbegin()->first);
    }
    // The lengths run, and room below N* = 1 (log scale) so that it is not on the axis.
    Figure f{"nstar_" + safe(task) + "_" + safe(format) + "_" + distribution,
             "N* against L: " + plot.task + ", " + format + ", " + distribution,
             "L (maximum length)",
             "N* (training sequences)",
             "",
             true,
             "set xtics 1\nset xrange [" + std::to_string(lowest) +
                 "-0.5:" + std::to_string(highest) + "+0.5]\nset yrange [0.5:*]\n",
             {}};
    // Each model its own colour, point type and dash, so that identical curves show as such;
    // its "not learned" markers (at N_max) shifted a little to its own side of L.
    const int models = static_cast<int>(plot.models.size());
    const int learned_points[] = {7, 5, 9, 13, 11}, missed_points[] = {6, 4, 8, 12, 10};
    std::vector<Figure::Series> learned_lines, missed_marks, published_marks;
    std::map<std::string, int> legends_seen;  // two models with one legend: the table's labels
    for (const auto& [model, legend] : plot.legend) ++legends_seen[legend];
    int k = 0;
    for (const auto& [model, points] : plot.models) {
      const std::string colour = " lc " + std::to_string(k + 1);
      const std::string name =
          legends_seen[plot.legend[model]] > 1 ? model.model : plot.legend[model];
      Figure::Series line{name,
                          {},
                          false,
                          "linespoints lw 2 pointsize 1.6 pointtype " +
                              std::to_string(learned_points[k % 5]) + " dashtype " +
                              std::to_string(k % 5 + 1) + colour};
      Figure::Series missed{
          name + ": not learned (at N_max)",
          {},
          false,
          "points pointsize 2.5 pointtype " + std::to_string(missed_points[k % 5]) + colour};
      const double shift = models > 1 ? 0.12 * (k - (models - 1) / 2.0) : 0;
      bool any_learned = false;
      for (const auto& [L, value] : points) {
        const auto& [nstar_value, n_max] = value;
        line.points.push_back({static_cast<double>(L), nstar_value});  // NaN breaks the line
        any_learned = any_learned || !std::isnan(nstar_value);
        if (std::isnan(nstar_value) && n_max > 0) missed.points.push_back({L + shift, n_max});
      }
      if (any_learned) learned_lines.push_back(line);
      if (!missed.points.empty()) missed_marks.push_back(missed);
      auto published = plot.published.find(model);
      if (published != plot.published.end())
        published_marks.push_back({name + ": published", published->second, false,
                                   "points pointsize 2 pointtype 2" + colour});
      ++k;
    }
    for (auto* group : {&learned_lines, &missed_marks, &published_marks})
      f.series.insert(f.series.end(), group->begin(), group->end());
    Figure::Series ceiling{
        "sequences available (N_max)", {}, false, "lines dashtype 3 lc 'gray40'"};
    for (const auto& [L, n_max] : plot.ceiling) ceiling.points.push_back({double(L), n_max});
    if (!ceiling.points.empty()) f.series.push_back(ceiling);
    report.figures.push_back(f);
  }
}

}  // namespace

std::unique_ptr<Study> make_nstar_study() { return std::make_unique<NstarStudy>(); }

// An N* outcome fills the row's learned, nstar, n_max and certified; it exports as nstar.csv.
OutcomeTables nstar_outcome_tables() {
  OutcomeTables t;
  t.kind = "nstar";
  t.write = [](const YAML::Node& value, OutcomeWriter& out) {
    if (!value["learned"]) return;
    const bool learned = value["learned"].as<bool>();
    out.set("learned", Store::Value::of(int64_t{learned}));
    if (learned) out.set("nstar", Store::Value::of(value["nstar"].as<int64_t>()));
    if (value["n_max"]) out.set("n_max", Store::Value::of(value["n_max"].as<int64_t>()));
    out.set("certified", Store::Value::of(int64_t{nstar_certified(value)}));
  };
  t.exports = {{"nstar", "one N* search (cell and settings)",
                "SELECT o.key AS outcome, o.study, o.label, o.cell_key, {cell}, o.format, "
                "o.distribution, o.L, o.learned, o.nstar, o.n_max, o.certified, o.max_steps, "
                "o.epsilon, o.created FROM outcomes o WHERE o.kind = 'nstar' ORDER BY o.rowid"}};
  return t;
}

}  // namespace induct
