#include "report/reports.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "options_yaml.hpp"
#include "report/context.hpp"
#include "train/trial.hpp"
#include "util/files.hpp"
#include "util/table.hpp"
#include "util/text.hpp"

namespace induct {

namespace fs = std::filesystem;

const std::vector<std::string> kFormatOrder = {"outcome", "cot", "acot"};
const std::vector<std::string> kDistributionOrder = {"fixed", "uniform", "short_to_long"};

int rank_of(const std::vector<std::string>& order, const std::string& value) {
  auto at = std::find(order.begin(), order.end(), value);
  return at == order.end() ? static_cast<int>(order.size()) : static_cast<int>(at - order.begin());
}

Table Grid::table() const {
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

std::string safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return s;
}

std::vector<const StoredOutcome*> ReportContext::latest(const std::string& kind) const {
  std::map<std::string, const StoredOutcome*> by_label;
  for (const auto& o : outcomes)
    if (o.kind == kind) by_label[o.label] = &o;
  std::vector<const StoredOutcome*> out;
  for (const auto& [label, o] : by_label) out.push_back(o);
  return out;
}

std::map<std::string, std::vector<const StoredOutcome*>> ReportContext::latest_per_configuration(
    const std::string& kind) const {
  std::map<std::string, std::vector<const StoredOutcome*>> by_label;
  for (const auto& o : outcomes)
    if (o.kind == kind) by_label[o.label].push_back(&o);
  const auto settings_of = [](const StoredOutcome* o) {
    return o->value["settings"] ? yaml::flow(o->value["settings"]) : std::string();
  };
  for (auto& [label, list] : by_label) {
    const std::string settings = settings_of(list.back());
    std::map<std::string, const StoredOutcome*> by_configuration;
    for (const StoredOutcome* o : list)
      if (settings_of(o) == settings)
        by_configuration[o->value["lr"].as<std::string>("") + " " +
                         o->value["seed"].as<std::string>("")] = o;
    list.clear();
    for (const auto& [configuration, o] : by_configuration) list.push_back(o);
  }
  return by_label;
}

std::string settings_text(const YAML::Node& settings) {
  if (!settings || !settings["training"]) return "settings not recorded";
  const YAML::Node training = settings["training"];
  auto list = [](const YAML::Node& values) {
    std::string text;
    for (const auto& v : values) text += (text.empty() ? "" : ", ") + v.as<std::string>();
    return "[" + text + "]";
  };
  std::string text = "max_steps " + training["max_steps"].as<std::string>() + ", epsilon " +
                     format_number(training["epsilon"].as<double>(), 3) + ", lr " +
                     list(settings["learning_rates"]) + ", seeds " + list(settings["seeds"]);
  text += training["stall_window"]
              ? ", failure detector (window " + training["stall_window"].as<std::string>() + ")"
              : ", no failure detector";
  if (settings["search"] && settings["search"]["certify"]) text += ", search.certify";
  return text;
}

std::string ReportContext::settings_note(
    const std::string& kind,
    const std::function<std::string(const YAML::Node&)>& value_text) const {
  const std::vector<const StoredOutcome*> shown = latest(kind);
  std::map<std::string, size_t> used;                 // settings -> cells shown with them
  std::map<std::string, std::string> shown_settings;  // label -> settings
  bool recorded = false;
  for (const StoredOutcome* o : shown) {
    const std::string text = settings_text(o->value["settings"]);
    recorded = recorded || o->value["settings"];
    ++used[text];
    shown_settings[o->label] = text;
  }
  if (!recorded) return "";
  std::string note = "Settings: ";
  if (used.size() == 1) {
    note += used.begin()->first + ".";
  } else {
    std::string parts;
    for (const auto& [text, cells] : used)
      parts += (parts.empty() ? "" : "; ") + text + " (" + std::to_string(cells) + " cells)";
    note += parts + ".";
  }
  std::vector<std::string> others;
  std::set<std::pair<std::string, std::string>> listed;
  for (const StoredOutcome& o : outcomes) {
    if (o.kind != kind) continue;
    const std::string text = settings_text(o.value["settings"]);
    auto found = shown_settings.find(o.label);
    if (found == shown_settings.end() || found->second == text) continue;
    std::string line = "- " + o.label + ": ";
    const std::string value = value_text ? value_text(o.value) : "";
    if (!value.empty()) line += value + " with ";
    if (listed.insert({o.label, line + text}).second) others.push_back(line + text);
  }
  if (!others.empty()) {
    note +=
        "\n\nAlso in the store under other settings, not shown (the table shows each cell's "
        "latest; `induct export` writes every one):\n";
    for (const auto& line : others) note += "\n" + line;
  }
  return note;
}

std::string paper_task_name(const YAML::Node& task) {
  const std::string name = task["name"] ? task["name"].as<std::string>() : "";
  if ((name == "modular" || name == "permutation") && task["m"]) {
    const std::string m = task["m"].as<std::string>();
    if (name == "permutation") return "S_" + m;
    return m == "2" ? "parity (Z_2)" : "Z_" + m;
  }
  return component_label(task);
}

void distinguish_series(Figure& f) {
  const int point_types[] = {7, 5, 9, 13, 11, 6, 4, 8};
  for (size_t k = 0; k < f.series.size(); ++k)
    f.series[k].style = "linespoints lw 2 pointsize " + format_number(1.2 + 0.4 * (k % 3), 2) +
                        " pointtype " + std::to_string(point_types[k % 8]) + " dashtype " +
                        std::to_string(k % 5 + 1);
}

std::string model_legend(const YAML::Node& model) {
  std::string text = model["name"] ? model["name"].as<std::string>() : "model";
  if (model["hidden"]) text += " " + model["hidden"].as<std::string>();
  if (model["layers"] && (!model["hidden"] || model["layers"].as<std::string>() != "1"))
    text += " " + model["layers"].as<std::string>() + "L";
  if (model["d_model"]) text += " d" + model["d_model"].as<std::string>();
  if (model["file"]) {  // a model file (torchscript): its name
    const std::string file = model["file"].as<std::string>();
    text += " " + file.substr(file.rfind('/') + 1);
  }
  return text;
}

std::string model_legend(const YAML::Node& model, const std::string& row_model) {
  const size_t open = row_model.find('(');
  if (open == std::string::npos) return model_legend(model);
  // The row's distinguishing options, less the file the legend already names.
  std::string options;
  std::stringstream list(row_model.substr(open + 1, row_model.size() - open - 2));
  for (std::string option; std::getline(list, option, ',');)
    if (!(model["file"] && option.rfind("file=", 0) == 0))
      options += (options.empty() ? "" : ",") + option;
  return options.empty() ? model_legend(model) : model_legend(model) + " (" + options + ")";
}

std::string reference_legend(const ReportContext& report) {
  if (!report.reference) return "";
  return "[published value and source from " + report.reference->file +
         ", x ours / published (+ ours - published for accuracies); ! = off by more than a "
         "factor " +
         format_number(report.reference->factor, 3) +
         " either way (accuracies: by more than the metric's tolerance), or learned on one side "
         "only] (reference_comparison lists every one).\n\n";
}

std::string ReportContext::compared(const std::string& label, const std::string& metric,
                                    const YAML::Node& task, const YAML::Node& model,
                                    const std::string& format, const std::string& distribution,
                                    int L, std::optional<double> ours) {
  if (!reference) return "";
  const auto published = reference->find(metric, task, model, format, distribution, L);
  for (const ReferenceValue* r : published) comparisons.push_back({label, metric, ours, r});
  return published.empty() ? "" : " [" + reference->compare(published, ours) + "]";
}

void ReportContext::write_table(const std::string& stem, const std::string& title,
                                const std::string& note, const Table& table) {
  write_file_atomically(
      (dir / (stem + ".md")).string(),
      "# " + title + "\n\n" + (note.empty() ? "" : note + "\n\n") + table.markdown());
  write_file_atomically((dir / (stem + ".csv")).string(), table.csv());
  index.push_back("- [" + title + "](" + stem + ".md) ([CSV](" + stem + ".csv))");
}

namespace {

using yaml::flow;

// Model labels name only the options that tell apart models of the same name within one
// column (same task, format, distribution and L), so a table shows "lstm" or
// "lstm(hidden=768)" rather than every default, and options that follow L (GPT-2's
// positions) do not split a row. A model read from a file always shows the file's name.
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
    if (model["file"]) varying.insert("file");  // a model file (torchscript) is the model
    return component_label(model, &varying);
  }

 private:
  // model name -> option -> column -> values seen
  std::map<std::string, std::map<std::string, std::map<std::string, std::set<std::string>>>>
      values_;
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

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\\\"") : std::string(1, c);
  return out + "\"";
}

bool render(const Figure& f, const fs::path& dir, std::vector<std::string>& index) {
  fs::create_directories(dir);
  std::string data;
  for (const auto& s : f.series) {
    data += "# " + s.title + "\n";
    for (const auto& [x, y] : s.points)  // NaN: a gap (a blank line breaks gnuplot's line)
      data += std::isnan(y) ? "\n" : format_number(x, 10) + " " + format_number(y, 10) + "\n";
    data += "\n\n";
  }
  write_file_atomically((dir / (f.stem + ".dat")).string(), data);
  std::string plot;
  for (size_t i = 0; i < f.series.size(); ++i) {
    // A series on the second axis is dashed, unless its style sets a dash itself (the line
    // options belong before the title: gnuplot refuses a second set after it).
    const Figure::Series& s = f.series[i];
    const bool dash = s.y2 && s.style.find("dashtype") == std::string::npos;
    plot += std::string(i ? ", " : "") + quote(f.stem + ".dat") + " index " + std::to_string(i) +
            " with " + s.style + (dash ? " dashtype 2" : "") + " title " + quote(s.title) +
            (s.y2 ? " axes x1y2" : "");
  }
  std::string script = "# " + f.title + " (induct report)\n";
  script += "set title " + quote(f.title) + " noenhanced\n";
  script += "set xlabel " + quote(f.xlabel) + "\nset ylabel " + quote(f.ylabel) + "\n";
  // A label at every decade, from 10^0.
  if (f.logy) script += "set logscale y\nset ytics 10\nset mytics 10\nset format y '10^{%T}'\n";
  if (!f.y2label.empty())
    script += "set y2label " + quote(f.y2label) + "\nset y2tics\nset ytics nomirror\n";
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
  if (ok)
    index.push_back("- ![" + f.title + "](figures/" + f.stem + ".png) ([SVG](figures/" + f.stem +
                    ".svg))");
  return ok;
}

}  // namespace

std::vector<std::string> trial_columns() {
  return {"N",
          "lr",
          "seed",
          "status",
          "steps",
          "best val loss",
          "final-state acc",
          "token acc",
          "stopped by",
          "resumed at",
          "seconds"};
}

std::vector<std::string> trial_row(const TrialSpec& t, const TrialResult& r) {
  const bool measured = r.finished();
  return {std::to_string(t.n),
          format_number(t.lr, 3),
          std::to_string(t.seed),
          to_string(r.status),
          std::to_string(r.steps),
          measured ? format_number(r.best_loss, 4) : "-",
          measured ? format_number(r.last.final_accuracy, 4) : "-",
          measured ? format_number(r.last.token_accuracy, 4) : "-",
          r.stalled ? r.stopped_by : "-",
          r.resumed_at > 0 ? std::to_string(r.resumed_at) : "-",
          format_number(r.seconds, 3)};
}

void write_reports(const Store& store, const fs::path& dir, const std::vector<KindReport>& kinds,
                   std::ostream* log, const Reference* reference, double min_accuracy) {
  ReportContext report;
  report.reference = reference;
  report.min_accuracy = min_accuracy;
  report.dir = dir;
  report.outcomes = store.outcomes();
  report.trials = store.all();
  ModelLabels model_labels;
  for (const KindReport& kind : kinds)
    for (const StoredOutcome* o : report.latest(kind.kind)) {
      const YAML::Node cell = o->value["cell"] ? o->value["cell"] : o->value;
      YAML::Node column(YAML::NodeType::Map);
      for (const char* k : {"task", "format", "distribution", "L"})
        if (cell[k]) column[k] = cell[k];
      model_labels.add(cell["model"], o->kind + flow(column));
    }
  Ranks ranks;
  report.row_of = [&](const YAML::Node& task, const YAML::Node& model, const std::string& format) {
    const std::string m = model_labels(model), t = component_label(task);
    // The paper's formats in its order, then the others (a format plugin's, or one with
    // options: code_trace(every=1) and code_trace(every=3) are two rows) as they come.
    const int known = rank_of(kFormatOrder, format);
    const int f = known < static_cast<int>(kFormatOrder.size())
                      ? known
                      : static_cast<int>(kFormatOrder.size()) + ranks("format", format);
    return RowKey{ranks("model", m), f, ranks("task", t), m, format, t};
  };
  // Each kind's tables and figures, in the registry's order.
  for (const KindReport& kind : kinds) kind.report(report);
  std::vector<std::string>& index = report.index;
  const std::vector<Figure>& figures = report.figures;
  const bool have_gnuplot = std::system("command -v gnuplot > /dev/null 2>&1") == 0;

  // Every training, in the order stored (a train study's whole result).
  Table trials;
  trials.header = trial_columns();
  trials.header.insert(trials.header.begin(), {"study", "cell"});
  for (const auto& stored : report.trials) {
    auto row = trial_row(stored.spec, stored.result);
    row.insert(row.begin(), {stored.study, cell_label(stored.spec.cell)});
    trials.rows.push_back(row);
  }
  if (!trials.rows.empty())
    report.write_table(
        "trials", "Every training in the store",
        "One row per configuration (cell, N, learning rate, seed) trained, in the "
        "order stored; cancelled: stopped because another configuration of its step "
        "succeeded; stopped by: the failure detector's rule that stopped it; resumed "
        "at: the step of the saved state it went on from (steps counts from 0).",
        trials);

  // Every comparison with a published value, one row each (the tables show them in place).
  if (reference) {
    Table compared;
    compared.header = {"cell",      "metric",           "ours",
                       "published", "ours / published", "ours - published",
                       "differs",   "source",           "reference row"};
    for (const auto& c : report.comparisons) {
      const bool both = c.ours && c.published->value;
      const bool ratio =
          reference->metric_of(*c.published).compare == ReferenceMetric::Compare::kRatio;
      compared.rows.push_back(
          {c.label, c.metric, c.ours ? format_number(*c.ours, 4) : "",
           c.published->value ? format_number(*c.published->value, 4) : "",
           both && ratio ? format_number(*c.ours / *c.published->value, 4) : "",
           both && !ratio ? format_number(*c.ours - *c.published->value, 4) : "",
           reference->differs(*c.published, c.ours) ? "true" : "false", c.published->source,
           c.published->where});
    }
    std::set<const ReferenceValue*> used;  // a value may match several cells
    for (const auto& c : report.comparisons) used.insert(c.published);
    const size_t matched = used.size();
    report.write_table(
        "reference_comparison", "Published values beside ours",
        "From " + reference->file + ": " + std::to_string(matched) + " of " +
            std::to_string(reference->values.size()) +
            " published values match a cell in the store. differs: ours / published is above " +
            format_number(reference->factor, 3) + " or below 1/" +
            format_number(reference->factor, 3) +
            " (counts and factors), ours - published beyond the metric's tolerance "
            "(accuracies), or one side is not learned (empty = not learned).",
        compared);
    if (log && matched < reference->values.size())
      *log << "reference: " << reference->values.size() - matched << " of "
           << reference->values.size() << " published value(s) in " << reference->file
           << " match no cell in the store\n";
  }

  std::vector<fs::path> drawn_paths;
  if (!figures.empty()) {
    if (have_gnuplot) {
      index.push_back("\n## Figures\n");
      for (const auto& f : figures)
        if (render(f, dir / "figures", index))
          drawn_paths.push_back(dir / "figures" / (f.stem + ".png"));
        else if (log)
          *log << "figure " << f.stem << " was not drawn: gnuplot's messages are in "
               << (dir / "figures" / (f.stem + ".log")).string() << "\n";
    } else if (log) {
      *log << "note: gnuplot is not installed; figures skipped (apt-get install gnuplot-nox)\n";
    }
  }
  if (index.empty()) return;
  write_file_atomically((dir / "report.md").string(),
                        "# Results\n\nDrawn from `results.sqlite` by `induct report`.\n\n" + [&] {
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
