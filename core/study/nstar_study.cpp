// The `nstar` study (SPEC.md section 5) and the `sharing` study built on it (section 6).
#include <ostream>

#include "options_yaml.hpp"
#include "report/format.hpp"
#include "report/reports.hpp"
#include "report/table.hpp"
#include "study/search.hpp"
#include "study/study.hpp"
#include "util/hash.hpp"

namespace induct {

namespace {

using yaml::flow;

// Everything that decides a cell's N*: the cell, the grid of configurations, training and
// search settings.
std::string nstar_key(const StudyConfig& config, const PreparedCell& cell) {
  YAML::Node identity;
  identity["kind"] = "nstar";
  identity["cell"] = cell.key();
  identity["training"] = to_yaml(config.training);
  for (double lr : config.learning_rates) identity["learning_rates"].push_back(yaml::exact(lr));
  for (uint64_t seed : config.seeds) identity["seeds"].push_back(seed);
  identity["search"]["factor"] = yaml::exact(config.search.factor);
  identity["search"]["max_steps"] = config.search.max_steps;
  identity["search"]["tolerance"] = yaml::exact(config.search.tolerance);
  // Not part of N*, but of the recorded cost: a search without cancellation is its own record.
  if (!config.search.cancel_on_success) identity["search"]["cancel_on_success"] = false;
  return content_key(flow(identity));
}

struct Search {
  bool complete = true;  // false: a trial error left a step undecided; rerun to retry
  bool learned = false;
  uint64_t nstar = 0, n_max = 0;
  size_t steps = 0, trained = 0;
  int64_t optimisation_steps = 0;
  bool stored = false;
};

// N* of one cell: from the store when this exact search finished before, else searched (each
// tested size is a step of run_step, itself reusing stored trials).
Search nstar_of(StudyRun& run, const PreparedCell& cell, const std::string& context) {
  const StudyConfig& config = run.config;
  const std::string key = nstar_key(config, cell);
  Search s;
  s.n_max = cell.plan.n_max;
  if (auto stored = run.store.find_outcome(key)) {
    s.stored = true;
    s.learned = stored->value["learned"].as<bool>();
    s.nstar = stored->value["nstar"].as<uint64_t>();
    s.steps = stored->value["steps"].size();
    s.optimisation_steps = stored->value["optimisation_steps"].as<int64_t>();
    return s;
  }
  SearchOutcome outcome;  // N_max = 0 (nothing to train on): not learned
  struct Undecided {};
  int tested = 0;
  try {
    if (cell.plan.n_max > 0)
      outcome = search_nstar(cell.plan.n_max, config.search, [&](uint64_t n) {
        const std::string where = context + " | step " + std::to_string(++tested) + " N=" +
                                  std::to_string(n);
        StepResult step = run_step(run, cell, n, config.search.cancel_on_success, {}, where);
        s.trained += step.trained;
        for (const auto& r : step.results) s.optimisation_steps += r.steps;
        if (!step.success && step.errors > 0) throw Undecided{};
        return step.success;
      });
  } catch (const Undecided&) {
    s.complete = false;
    return s;
  }
  s.learned = outcome.learned;
  s.nstar = outcome.nstar;
  s.steps = outcome.steps.size();

  YAML::Node value;
  value["cell"] = cell.cell.to_yaml();
  value["plugins"] = cell.plugin_versions;
  value["learned"] = s.learned;
  value["nstar"] = s.nstar;
  value["n_max"] = s.n_max;
  value["largest_failure"] = outcome.largest_failure;
  value["optimisation_steps"] = s.optimisation_steps;
  // The settings that change the cost but not N*, for the search-cost table.
  value["cancel_on_success"] = config.search.cancel_on_success;
  value["stall_window"] = config.training.stall_window;
  value["steps"] = YAML::Node(YAML::NodeType::Sequence);
  for (const auto& step : outcome.steps) {
    YAML::Node row(YAML::NodeType::Sequence);
    row.SetStyle(YAML::EmitterStyle::Flow);
    row.push_back(step.n);
    row.push_back(step.success);
    value["steps"].push_back(row);
  }
  run.store.put_outcome({key, config.name, "nstar", cell.label, value, ""});
  return s;
}

// A rough estimate: the average time of the cells done so far, times the cells left.
std::string eta(const Progress& progress, size_t done, size_t total) {
  if (done == 0 || done >= total) return "";
  const double left = progress.elapsed() / done * (total - done);
  return ", about " + format_duration(left) + " left";
}

std::string describe(const Search& s) {
  if (!s.complete) return "incomplete (a trial stopped with an error; rerun to retry)";
  std::string text = s.learned ? "N* = " + std::to_string(s.nstar)
                               : "not learned at N_max = " + std::to_string(s.n_max);
  return s.stored ? text + " (stored)" : text;
}


}  // namespace

int run_nstar_study(StudyRun& run, const std::vector<PreparedCell>& cells) {
  const StudyConfig& config = run.config;
  // The N* table holds only what the search decides (the same after any resume); what it
  // cost depends on which trials ran before a success cancelled the rest, so it is a table of
  // its own.
  Table table, cost;
  table.header = {"cell", "N_max", "N*", "search steps"};
  cost.header = {"cell", "search steps", "trials trained now", "optimisation steps (all trials)"};
  size_t incomplete = 0;
  for (size_t c = 0; c < cells.size(); ++c) {
    const PreparedCell& cell = cells[c];
    const std::string context = cell_context(config, c, cells.size(), cell.label);
    // The live line also carries the estimate from the cells done so far.
    Search s = nstar_of(run, cell, context + eta(run.progress, c, cells.size()));
    run.progress.clear();
    run.progress.log(context + ": " + describe(s) + eta(run.progress, c + 1, cells.size()));
    incomplete += !s.complete;
    table.rows.push_back({cell.label, format_count(s.n_max),
                          !s.complete ? "?" : s.learned ? format_count(s.nstar) : kNotLearned,
                          std::to_string(s.steps)});
    cost.rows.push_back({cell.label, std::to_string(s.steps), std::to_string(s.trained),
                         std::to_string(s.optimisation_steps)});
  }
  run.out << "\n" << table.text();
  write_file_atomically((run.out_dir / (config.name + "_cost.md")).string(),
                        "# " + config.name + ": search cost\n\n" + cost.markdown());
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name + ": N* per cell\n\n" + table.markdown());
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  write_reports(run.store, run.out_dir, &run.out);
  return incomplete > 0 ? 1 : 0;
}

int run_sharing_study(StudyRun& run, const std::vector<PreparedCell>& cells) {
  const StudyConfig& config = run.config;
  const int max_L = *std::max_element(config.sharing_lengths.begin(), config.sharing_lengths.end());
  size_t per_base = static_cast<size_t>(max_L - 1);
  for (int L : config.sharing_lengths) per_base += L != 2;
  Table table;
  table.header = {"cell", "L", "sum N*_n", "N*_joint", "kappa"};
  size_t incomplete = 0, done = 0;
  for (size_t base = 0; base * per_base < cells.size(); ++base) {
    const PreparedCell* group = &cells[base * per_base];
    // N*_n for n = 2..max L (Fixed), in order.
    auto search = [&](const PreparedCell& cell) {
      const std::string context = cell_context(config, done, cells.size(), cell.label);
      Search s = nstar_of(run, cell, context + eta(run.progress, done, cells.size()));
      run.progress.clear();
      run.progress.log(context + ": " + describe(s) + eta(run.progress, done + 1, cells.size()));
      ++done;
      incomplete += !s.complete;
      return s;
    };
    std::vector<Search> fixed;
    for (int n = 2; n <= max_L; ++n) fixed.push_back(search(group[n - 2]));
    const Cell& first = group[0].cell;
    const std::string base_label = group[0].label.substr(0, group[0].label.rfind(" fixed"));
    YAML::Node value;
    value["task"] = first.task;
    value["model"] = first.model;
    value["format"] = first.format;
    value["lengths"] = YAML::Node(YAML::NodeType::Sequence);
    size_t joint_index = static_cast<size_t>(max_L - 1);
    bool complete = true;
    for (int L : config.sharing_lengths) {
      const Search joint = L == 2 ? fixed[0] : search(group[joint_index++]);
      bool all_learned = joint.learned && joint.complete;
      uint64_t sum = 0;
      for (int n = 2; n <= L; ++n) {
        all_learned = all_learned && fixed[n - 2].learned && fixed[n - 2].complete;
        sum += fixed[n - 2].nstar;
      }
      complete = complete && joint.complete;
      for (int n = 2; n <= L; ++n) complete = complete && fixed[n - 2].complete;
      YAML::Node row;
      row["L"] = L;
      row["sum_fixed"] = sum;
      row["joint"] = joint.nstar;
      row["learned"] = all_learned;
      const double kappa = all_learned ? static_cast<double>(sum) / joint.nstar : 0;
      row["kappa"] = yaml::exact(kappa);
      value["lengths"].push_back(row);
      table.rows.push_back({base_label, std::to_string(L), all_learned ? format_count(sum) : kNotLearned,
                            joint.learned ? format_count(joint.nstar) : kNotLearned,
                            all_learned ? format_number(kappa, 3) : kNotLearned});
    }
    if (complete) {
      YAML::Node identity;
      identity["kind"] = "sharing";
      for (int n = 0; n < static_cast<int>(per_base); ++n) identity["cells"].push_back(nstar_key(config, group[n]));
      run.store.put_outcome({content_key(flow(identity)), config.name, "sharing", base_label, value, ""});
    }
  }
  run.out << "\n" << table.text();
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name + ": sharing factor kappa\n\n" + table.markdown());
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  write_reports(run.store, run.out_dir, &run.out);
  return incomplete > 0 ? 1 : 0;
}

}  // namespace induct
