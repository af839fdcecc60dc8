// The `nstar` study (docs/method.md section 5) and the `sharing` study built on it (section 6).
#include <ostream>

#include "options_yaml.hpp"
#include "report/format.hpp"
#include "report/reports.hpp"
#include "report/table.hpp"
#include "study/search.hpp"
#include "study/study.hpp"
#include "util/hash.hpp"

namespace induct {

int run_nstar_study(StudyRun& run, const std::vector<PreparedCell>& cells) {
  const StudyConfig& config = run.config;
  // The N* table holds only what the search decides (the same after any resume); what it
  // cost depends on which trials ran before a success cancelled the rest, so it is a table of
  // its own.
  Table table, cost;
  table.header = {"cell", "N_max", "N*", "search steps"};
  cost.header = {"cell", "search steps", "trials trained now", "optimisation steps (all trials)"};
  size_t incomplete = 0, uncertified = 0;
  const std::vector<SearchRecord> searches = run_searches(run, cells);
  for (size_t c = 0; c < cells.size(); ++c) {
    const SearchRecord& s = searches[c];
    incomplete += !s.complete;
    uncertified += s.complete && !s.certified;
    table.rows.push_back({cells[c].label, format_count(s.n_max),
                          !s.complete ? "?" : format_nstar(s.learned, s.nstar, s.certified),
                          std::to_string(s.steps)});
    cost.rows.push_back({cells[c].label, std::to_string(s.steps), std::to_string(s.trained),
                         std::to_string(s.optimisation_steps)});
  }
  const std::string legend = uncertified ? "\n" + kNstarLegend + ".\n" : "";
  run.out << "\n" << table.text() << legend;
  write_file_atomically((run.out_dir / (config.name + "_cost.md")).string(),
                        "# " + config.name + ": search cost\n\n" + cost.markdown());
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name + ": N* per cell\n\n" + table.markdown() + legend);
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
  size_t incomplete = 0, uncertified = 0;
  const std::vector<SearchRecord> searches = run_searches(run, cells);
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
    value["format"] = first.format;
    value["lengths"] = YAML::Node(YAML::NodeType::Sequence);
    size_t joint_index = static_cast<size_t>(max_L - 1);
    bool complete = true;
    for (int L : config.sharing_lengths) {
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
      for (int n = 0; n < static_cast<int>(per_base); ++n) identity["cells"].push_back(nstar_key(config, group[n]));
      run.store.put_outcome({content_key(yaml::flow(identity)), config.name, "sharing", base_label, value, ""});
    }
  }
  // kappa of upper bounds is no bound: the marks on its terms say which it rests on.
  const std::string legend = uncertified ? "\n" + kNstarLegend + ".\n" : "";
  run.out << "\n" << table.text() << legend;
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name + ": sharing factor kappa\n\n" + table.markdown() + legend);
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  write_reports(run.store, run.out_dir, &run.out);
  return incomplete > 0 ? 1 : 0;
}

}  // namespace induct
