#include "report/reports.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

#include "options_yaml.hpp"
#include "report/format.hpp"
#include "report/table.hpp"
#include "train/trial.hpp"

namespace induct {

namespace fs = std::filesystem;

namespace {

using yaml::flow;

// Model labels name only the options that tell apart models of the same name within one
// column (same task, format, distribution and L), so a table shows "lstm" or
// "lstm(hidden=768)" rather than every default, and options that follow L (GPT-2's
// positions) do not split a row.
class ModelLabels {
 public:
  void add(const YAML::Node& model, const std::string& column) {
    const std::string name = model["name"].as<std::string>();
    for (const auto& entry : model) {
      auto& seen = values_[name][entry.first.as<std::string>()][column];
      seen.insert(flow(entry.second));
    }
  }
  std::string operator()(const YAML::Node& model) const {
    const std::string name = model["name"].as<std::string>();
    std::set<std::string> varying;
    auto found = values_.find(name);
    if (found != values_.end())
      for (const auto& [key, by_column] : found->second)
        for (const auto& [column, seen] : by_column)
          if (seen.size() > 1) varying.insert(key);
    return component_label(model, &varying);
  }

 private:
  // model name -> option -> column -> values seen
  std::map<std::string, std::map<std::string, std::map<std::string, std::set<std::string>>>> values_;
};

const std::vector<std::string> kFormatOrder = {"outcome", "cot", "acot"};
const std::vector<std::string> kDistributionOrder = {"fixed", "uniform", "short_to_long"};

int rank_of(const std::vector<std::string>& order, const std::string& value) {
  auto at = std::find(order.begin(), order.end(), value);
  return at == order.end() ? static_cast<int>(order.size()) : static_cast<int>(at - order.begin());
}

// A row of the paper's tables: model / format / task, in order of first appearance (formats
// in the paper's order).
struct RowKey {
  int model_rank, format_rank, task_rank;
  std::string model, format, task;
  bool operator<(const RowKey& o) const {
    return std::tie(model_rank, format_rank, task_rank) < std::tie(o.model_rank, o.format_rank, o.task_rank);
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

class Ranks {
 public:
  int operator()(const std::string& kind, const std::string& value) {
    auto& seen = ranks_[kind];
    auto [it, fresh] = seen.emplace(value, static_cast<int>(seen.size()));
    return it->second;
  }

 private:
  std::map<std::string, std::map<std::string, int>> ranks_;
};

// Rows x columns of strings, rendered as a table with "–" where a row has no value.
struct Grid {
  std::map<RowKey, std::map<ColumnKey, std::string>> cells;
  Table table() const {
    std::set<ColumnKey> columns;
    for (const auto& [row, values] : cells)
      for (const auto& [column, value] : values) columns.insert(column);
    Table t;
    t.header = {"model", "format", "task"};
    for (const auto& c : columns) t.header.push_back(c.title());
    for (const auto& [row, values] : cells) {
      std::vector<std::string> line{row.model, row.format, row.task};
      for (const auto& c : columns) {
        auto found = values.find(c);
        line.push_back(found == values.end() ? "" : found->second);
      }
      t.rows.push_back(line);
    }
    return t;
  }
};

void write_table(const fs::path& dir, const std::string& stem, const std::string& title,
                 const std::string& note, const Table& table, std::vector<std::string>& index) {
  write_file_atomically((dir / (stem + ".md")).string(),
                        "# " + title + "\n\n" + (note.empty() ? "" : note + "\n\n") + table.markdown());
  write_file_atomically((dir / (stem + ".csv")).string(), table.csv());
  index.push_back("- [" + title + "](" + stem + ".md) ([CSV](" + stem + ".csv))");
}

std::string safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\\\"") : std::string(1, c);
  return out + "\"";
}

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

bool render(const Figure& f, const fs::path& dir, std::vector<std::string>& index) {
  fs::create_directories(dir);
  std::string data;
  for (const auto& s : f.series) {
    data += "# " + s.title + "\n";
    for (const auto& [x, y] : s.points) data += format_number(x, 10) + " " + format_number(y, 10) + "\n";
    data += "\n\n";
  }
  write_file_atomically((dir / (f.stem + ".dat")).string(), data);
  std::string plot;
  for (size_t i = 0; i < f.series.size(); ++i)
    plot += std::string(i ? ", " : "") + quote(f.stem + ".dat") + " index " + std::to_string(i) +
            " with " + f.series[i].style + " title " + quote(f.series[i].title) +
            (f.series[i].y2 ? " axes x1y2 dashtype 2" : "");
  std::string script = "# " + f.title + " (induct report)\n";
  script += "set title " + quote(f.title) + " noenhanced\n";
  script += "set xlabel " + quote(f.xlabel) + "\nset ylabel " + quote(f.ylabel) + "\n";
  // A label at every decade, from 10^0.
  if (f.logy) script += "set logscale y\nset ytics 10\nset mytics 10\nset format y '10^{%T}'\n";
  if (!f.y2label.empty()) script += "set y2label " + quote(f.y2label) + "\nset y2tics\nset ytics nomirror\n";
  script += "set key top left noenhanced\nset grid\n" + f.extra;
  for (const char* terminal : {"pngcairo size 960,600", "svg size 960,600"}) {
    const std::string extension = std::string(terminal).rfind("png", 0) == 0 ? "png" : "svg";
    script += "set terminal " + std::string(terminal) + "\nset output " +
              quote(f.stem + "." + extension) + "\nplot " + plot + "\n";
  }
  write_file_atomically((dir / (f.stem + ".gp")).string(), script);
  // gnuplot's messages (e.g. "empty x range" for a single point) go to the figure's .log.
  const std::string command = "cd " + quote(dir.string()) + " && gnuplot " + quote(f.stem + ".gp") +
                              " > " + quote(f.stem + ".log") + " 2>&1";
  const bool ok = std::system(command.c_str()) == 0;
  if (ok) index.push_back("- ![" + f.title + "](figures/" + f.stem + ".png) ([SVG](figures/" + f.stem + ".svg))");
  return ok;
}

}  // namespace

std::vector<std::string> trial_columns() {
  return {"N", "lr", "seed", "status", "steps", "best val loss", "final-state acc", "token acc",
          "seconds"};
}

std::vector<std::string> trial_row(const TrialSpec& t, const TrialResult& r) {
  const bool measured = r.status != TrialStatus::kError && r.status != TrialStatus::kCancelled;
  return {std::to_string(t.n), format_number(t.lr, 3), std::to_string(t.seed), to_string(r.status),
          std::to_string(r.steps), measured ? format_number(r.best_loss, 4) : "-",
          measured ? format_number(r.last.final_accuracy, 4) : "-",
          measured ? format_number(r.last.token_accuracy, 4) : "-", format_number(r.seconds, 3)};
}

bool nstar_certified(const YAML::Node& outcome) {
  if (outcome["certified"]) return outcome["certified"].as<bool>();
  return outcome["stall_window"].as<int64_t>(0) == 0;
}

void write_reports(const Store& store, const fs::path& dir, std::ostream* log) {
  const auto outcomes = store.outcomes();
  // Latest outcome per (kind, cell label): a rerun with other settings replaces the row.
  std::map<std::pair<std::string, std::string>, const StoredOutcome*> latest;
  for (const auto& o : outcomes) latest[{o.kind, o.label}] = &o;

  ModelLabels model_labels;
  for (const auto& [key, o] : latest) {
    const YAML::Node cell = o->value["cell"] ? o->value["cell"] : o->value;
    YAML::Node column(YAML::NodeType::Map);
    for (const char* k : {"task", "format", "distribution", "L"})
      if (cell[k]) column[k] = cell[k];
    model_labels.add(cell["model"], o->kind + flow(column));
  }
  Ranks ranks;
  auto row_of = [&](const YAML::Node& task, const YAML::Node& model, const std::string& format) {
    const std::string m = model_labels(model), t = component_label(task);
    return RowKey{ranks("model", m), rank_of(kFormatOrder, format), ranks("task", t), m, format, t};
  };

  std::vector<std::string> index;
  std::vector<Figure> figures;
  const bool have_gnuplot = std::system("command -v gnuplot > /dev/null 2>&1") == 0;

  // N* (Table 1) and N* against L (Figures 2-5).
  Grid nstar;
  // One figure per (task, format, distribution), every model on it: N* where learned, a
  // marker at N_max where not, and the ceiling (the sequences available, N_max) as a line.
  struct NstarPlot {
    std::map<RowKey, Figure::Series> learned, not_learned;
    std::map<int, double> ceiling;  // L -> N_max
  };
  std::map<std::tuple<int, int, int, std::string, std::string, std::string>, NstarPlot> nstar_plots;
  for (const auto& [key, o] : latest) {
    if (o->kind != "nstar") continue;
    const YAML::Node cell = o->value["cell"];
    const RowKey row = row_of(cell["task"], cell["model"], cell["format"].as<std::string>());
    const std::string distribution = cell["distribution"].as<std::string>();
    const int L = cell["L"].as<int>();
    const bool learned = o->value["learned"].as<bool>();
    const auto n = o->value["nstar"].as<uint64_t>();
    nstar.cells[row][{rank_of(kDistributionOrder, distribution), L, distribution}] =
        format_nstar(learned, n, nstar_certified(o->value));
    NstarPlot& plot = nstar_plots[{row.task_rank, row.format_rank,
                                   rank_of(kDistributionOrder, distribution), row.task, row.format,
                                   distribution}];
    const auto n_max = o->value["n_max"].as<double>(0);
    if (n_max > 0) plot.ceiling[L] = std::max(plot.ceiling[L], n_max);
    RowKey by_model = row;  // one line per model: the task and format are the figure's
    by_model.format_rank = by_model.task_rank = 0;
    by_model.format = by_model.task = "";
    auto& line = (learned ? plot.learned : plot.not_learned)[by_model];
    line.title = learned ? row.model : row.model + ": not learned (drawn at N_max)";
    if (!learned) line.style = "points pointtype 6 pointsize 2.5";
    if (learned || n_max > 0)
      line.points.push_back({static_cast<double>(L), learned ? static_cast<double>(n) : n_max});
  }
  if (!nstar.cells.empty())
    write_table(dir, "nstar_table", "N*: minimal training-set size (Table 1 layout)",
                kNstarLegend, nstar.table(), index);

  // Search cost: every N* search in the store, in the order they ran (the same cell searched
  // with and without cancellation or the failure detector appears once per variant).
  Table cost;
  cost.header = {"cell", "first success cancels", "failure detector", "N*", "search steps",
                 "certification re-runs", "optimisation steps"};
  for (const auto& o : outcomes) {
    if (o.kind != "nstar") continue;
    const YAML::Node& v = o.value;
    cost.rows.push_back({o.label, v["cancel_on_success"] ? v["cancel_on_success"].as<std::string>() : "true",
                         v["failure_detector"] ? v["failure_detector"].as<std::string>()
                         : v["stall_window"] && v["stall_window"].as<int64_t>() > 0
                             ? "window " + v["stall_window"].as<std::string>()
                             : "none",
                         format_nstar(v["learned"].as<bool>(), v["nstar"].as<uint64_t>(), nstar_certified(v)),
                         std::to_string(v["steps"].size()), std::to_string(v["certification"] ? v["certification"].size() : 0),
                         v["optimisation_steps"].as<std::string>()});
  }
  if (!cost.rows.empty())
    write_table(dir, "search_cost", "Search cost: optimisation steps per N* search",
                "Every search in the store, in the order it ran. \"first success cancels\" false "
                "is the paper's procedure (every configuration to its own stop).",
                cost, index);
  for (auto& [which, plot] : nstar_plots) {
    const auto& [task_rank, format_rank, distribution_rank, task, format, distribution] = which;
    Figure f{"nstar_" + safe(task) + "_" + format + "_" + distribution,
             "N* against L: " + task + ", " + format + ", " + distribution, "L (maximum length)",
             "N* (training sequences)", "", true,
             "set xtics 1\nset offsets 0.2, 0.2, 0, 0\nset yrange [1:*]\n", {}};
    for (auto* lines : {&plot.learned, &plot.not_learned})
      for (auto& [model, s] : *lines) {
        std::sort(s.points.begin(), s.points.end());
        if (!s.points.empty()) f.series.push_back(s);
      }
    Figure::Series ceiling{"sequences available (N_max)", {}, false, "lines dashtype 3 lc 'gray40'"};
    for (const auto& [L, n_max] : plot.ceiling) ceiling.points.push_back({double(L), n_max});
    if (!ceiling.points.empty()) f.series.push_back(ceiling);
    figures.push_back(f);
  }

  // kappa (Figures 6-7), and kappa(L) of every model of a (format, task) on one plot.
  Grid kappa;
  std::map<std::tuple<int, int, std::string, std::string>, Figure> kappa_compared;
  for (const auto& [key, o] : latest) {
    if (o->kind != "sharing") continue;
    const RowKey row = row_of(o->value["task"], o->value["model"], o->value["format"].as<std::string>());
    Figure f{"kappa_" + safe(row.model) + "_" + row.format + "_" + safe(row.task),
             "Sharing: " + row.model + ", " + row.format + ", " + row.task, "L",
             "training sequences", "kappa", true, "set xtics 1\nset offsets 0.2, 0.2, 0, 0\n", {}};
    Figure::Series sum{"sum of N*_n (Fixed, n = 2..L)", {}, false},
        joint{"N*_joint (Uniform 2..L)", {}, false}, k{"kappa", {}, true};
    for (const auto& entry : o->value["lengths"]) {
      const int L = entry["L"].as<int>();
      const bool learned = entry["learned"].as<bool>();
      const double value = entry["kappa"].as<double>();
      kappa.cells[row][{0, L, "kappa"}] = learned ? format_number(value, 3) : kNotLearned;
      if (learned) {
        sum.points.push_back({double(L), entry["sum_fixed"].as<double>()});
        joint.points.push_back({double(L), entry["joint"].as<double>()});
        k.points.push_back({double(L), value});
      }
    }
    f.series = {sum, joint, k};
    if (!k.points.empty()) figures.push_back(f);
    Figure& compared = kappa_compared[{row.format_rank, row.task_rank, row.format, row.task}];
    if (compared.stem.empty())
      compared = {"kappa_" + row.format + "_" + safe(row.task),
                  "Sharing factor kappa(L): " + row.format + ", " + row.task, "L", "kappa", "",
                  true,
                  "set xtics 1\nset offsets 0.2, 0.2, 0, 0\n"
                  // kappa = 1: isolated per-length solutions; above, sharing; below, interference.
                  "set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 3 lc 'gray40'\n",
                  {}};
    if (!k.points.empty()) compared.series.push_back({row.model, k.points, false});
  }
  // Worth a figure of its own only when it compares.
  for (auto& [which, f] : kappa_compared)
    if (f.series.size() > 1) figures.push_back(f);
  if (!kappa.cells.empty())
    write_table(dir, "kappa_table", "Sharing factor kappa(L) = sum N*_n / N*_joint(L)",
                "kappa >> 1: lengths share one mechanism; about 1: isolated per-length solutions; "
                "< 1: interference. " + kNotLearned + ": some N* not learned.",
                kappa.table(), index);

  // Length generalization (Table 2) and accuracy against length.
  Grid lengthgen;
  Table curves;
  curves.header = {"model", "format", "task", "distribution", "L", "length", "sequences",
                   "final-state accuracy", "normalized", "token accuracy"};
  std::map<std::pair<std::string, std::string>, Figure> lengthgen_figures;
  for (const auto& [key, o] : latest) {
    if (o->kind != "lengthgen") continue;
    const YAML::Node cell = o->value["cell"];
    const RowKey row = row_of(cell["task"], cell["model"], cell["format"].as<std::string>());
    const std::string distribution = cell["distribution"].as<std::string>();
    const int L = cell["L"].as<int>();
    const int report_length = o->value["report_length"].as<int>();
    Figure& f = lengthgen_figures[{"", row.format}];
    f.stem = "lengthgen_" + row.format;
    f.title = "Length generalization, " + row.format;
    f.xlabel = "length (multiples of the trained maximum L)";
    f.ylabel = "normalized final-state accuracy";
    f.extra = "set yrange [-0.2:1.1]\nset key center right\n";
    Figure::Series s{row.model + " " + row.task + " " + distribution + " L=" + std::to_string(L), {}, false};
    for (const auto& point : o->value["curve"]) {
      const int length = point[0].as<int>();
      const double normalized = point[3].as<double>();
      curves.rows.push_back({row.model, row.format, row.task, distribution, std::to_string(L),
                             std::to_string(length), point[1].as<std::string>(),
                             format_fraction(point[2].as<double>()), format_fraction(normalized),
                             format_fraction(point[4].as<double>())});
      s.points.push_back({static_cast<double>(length) / L, normalized});
      if (length == report_length)
        lengthgen.cells[row][{rank_of(kDistributionOrder, distribution), L, distribution}] =
            format_fraction(normalized);
    }
    f.series.push_back(s);
  }
  if (!lengthgen.cells.empty()) {
    write_table(dir, "lengthgen_table", "Length generalization at 2L (Table 2 layout)",
                "Normalized final-state accuracy (acc - 1/S) / (1 - 1/S): 0 is chance, 1 perfect; "
                "CoT decodes greedily.",
                lengthgen.table(), index);
    write_file_atomically((dir / "lengthgen_curves.csv").string(), curves.csv());
    index.push_back("- [every evaluated length](lengthgen_curves.csv)");
  }
  for (auto& [which, f] : lengthgen_figures) figures.push_back(f);

  // Every training, in the order stored (a train study's whole result).
  Table trials;
  trials.header = trial_columns();
  trials.header.insert(trials.header.begin(), {"study", "cell"});
  for (const auto& stored : store.all()) {
    auto row = trial_row(stored.spec, stored.result);
    row.insert(row.begin(), {stored.study, cell_label(stored.spec.cell)});
    trials.rows.push_back(row);
  }
  if (!trials.rows.empty())
    write_table(dir, "trials", "Every training in the store",
                "One row per configuration (cell, N, learning rate, seed) trained, in the order "
                "stored; cancelled: stopped because another configuration of its step succeeded.",
                trials, index);

  std::vector<fs::path> drawn_paths;
  if (!figures.empty()) {
    if (have_gnuplot) {
      index.push_back("\n## Figures\n");
      for (const auto& f : figures)
        if (render(f, dir / "figures", index)) drawn_paths.push_back(dir / "figures" / (f.stem + ".png"));
    } else if (log) {
      *log << "note: gnuplot is not installed; figures skipped (apt-get install gnuplot-nox)\n";
    }
  }
  if (index.empty()) return;
  write_file_atomically((dir / "report.md").string(),
                        "# Results\n\nDrawn from `results.sqlite` by `induct report`.\n\n" +
                            [&] {
                              std::string s;
                              for (const auto& line : index) s += line + "\n";
                              return s;
                            }());
  if (log) {
    *log << "report: " << (dir / "report.md").string() << " (" << figures.size() << " figure(s)"
         << (have_gnuplot ? ", " + std::to_string(drawn_paths.size()) + " drawn" : "") << ")\n";
    constexpr size_t kNamed = 4;  // the rest are listed in report.md
    for (size_t i = 0; i < drawn_paths.size() && i < kNamed; ++i)
      *log << "  figure: " << drawn_paths[i].string() << "\n";
    if (drawn_paths.size() > kNamed)
      *log << "  and " << drawn_paths.size() - kNamed << " more figure(s) in report.md\n";
  }
}

}  // namespace induct
