// The `lengthgen` study (docs/method.md section 7): train at N (N_max by default) until a
// configuration succeeds, then read its accuracy on longer sequences.
#include <cmath>
#include <ostream>

#include "options_yaml.hpp"
#include "report/format.hpp"
#include "report/reports.hpp"
#include "report/table.hpp"
#include "study/study.hpp"
#include "train/generalization.hpp"
#include "util/hash.hpp"

namespace induct {

int run_lengthgen_study(StudyRun& run, const std::vector<PreparedCell>& cells) {
  const StudyConfig& config = run.config;
  Table table;
  table.header = {"cell", "N", "chosen", "status"};
  size_t errors = 0;
  for (size_t c = 0; c < cells.size(); ++c) {
    const PreparedCell& cell = cells[c];
    const uint64_t n = training_size(config, cell);
    const auto lengths = generalization_lengths(config.lengthgen, cell.cell.L);
    const std::string context = cell_context(config, c, cells.size(), cell.label);
    StepResult step = run_step(run, cell, n, true, lengths, context + " N=" + std::to_string(n));
    run.progress.clear();
    errors += step.errors;
    // The configuration to read: a success (the lowest validation loss among successes), else
    // the finished configuration with the lowest validation loss.
    long chosen = -1;
    for (size_t i = 0; i < step.results.size(); ++i) {
      const TrialResult& r = step.results[i];
      if (r.status == TrialStatus::kCancelled || r.status == TrialStatus::kError) continue;
      if (r.generalization.size() != lengths.size()) continue;
      if (chosen < 0) {
        chosen = static_cast<long>(i);
        continue;
      }
      const TrialResult& best = step.results[chosen];
      if (r.succeeded() != best.succeeded() ? r.succeeded() : r.best_loss < best.best_loss)
        chosen = static_cast<long>(i);
    }
    std::vector<std::string> row{cell.label, format_count(n)};
    if (chosen < 0) {
      run.progress.log(context + ": no configuration finished (errors); rerun to retry");
      row.insert(row.end(), {"-", "error"});
      table.rows.push_back(row);
      continue;
    }
    const TrialSpec& spec = step.trials[chosen];
    const TrialResult& result = step.results[chosen];
    YAML::Node value;
    value["cell"] = cell.cell.to_yaml();
    value["plugins"] = cell.plugin_versions;
    value["n"] = n;
    value["lr"] = yaml::exact(spec.lr);
    value["seed"] = spec.seed;
    value["status"] = to_string(result.status);
    value["best_loss"] = yaml::exact(result.best_loss);
    value["states"] = cell.num_states;
    value["report_length"] = static_cast<int>(std::lround(config.lengthgen.report_multiple * cell.cell.L));
    std::string line = context + ": " + spec.configuration() + " (" + to_string(result.status) + ")";
    row.push_back(spec.configuration());
    row.push_back(to_string(result.status));
    for (const LengthMetrics& m : result.generalization) {
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
    }
    run.progress.log(line);
    std::string identity = "lengthgen";
    for (const TrialSpec& t : step.trials) {
      identity += ' ';
      identity += t.key();
    }
    run.store.put_outcome({content_key(identity), config.name, "lengthgen", cell.label, value, ""});
    // Table columns: the normalized accuracy at each length, as "2L" etc.
    for (size_t k = 0; k < result.generalization.size(); ++k) {
      std::string column = "x";  // (not "x" + string: GCC 12's -Wrestrict misfires on it in C++20)
      column += format_number(static_cast<double>(lengths[k]) / cell.cell.L, 3);
      auto at = std::find(table.header.begin(), table.header.end(), column);
      if (at == table.header.end()) {
        table.header.push_back(column);
        at = table.header.end() - 1;
      }
      const size_t index = static_cast<size_t>(at - table.header.begin());
      if (row.size() <= index) row.resize(index + 1);
      row[index] = format_fraction(normalized_accuracy(result.generalization[k].final_accuracy,
                                                       cell.num_states));
    }
    table.rows.push_back(row);
  }
  run.out << "\nnormalized final-state accuracy at multiples of L (0 = chance, 1 = perfect):\n"
          << table.text();
  write_file_atomically((run.out_dir / (config.name + ".md")).string(),
                        "# " + config.name + ": length generalization\n\nNormalized final-state "
                        "accuracy at multiples of L (0 = chance, 1 = perfect).\n\n" +
                            table.markdown());
  write_file_atomically((run.out_dir / (config.name + ".csv")).string(), table.csv());
  write_reports(run.store, run.out_dir, &run.out);
  return errors > 0 ? 1 : 0;
}

}  // namespace induct
