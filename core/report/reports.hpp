// `induct report`: the paper's tables and figures, drawn from a results store.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "config/study_config.hpp"
#include "store/store.hpp"
#include "util/table.hpp"

namespace induct {

// Writes into `dir`:
//   nstar_table.{md,csv}      N* per cell in the layout of the paper's Table 1: rows
//                             model / format / task, columns distribution x L, "–" = not learned
//   kappa_table.{md,csv}      the sharing factor kappa(L) per model / format / task
//   lengthgen_table.{md,csv}  normalized final-state accuracy at the report length (2L),
//                             rows model / format / task, columns distribution x L (Table 2)
//   lengthgen_curves.csv      every evaluated length
//   figures/*.{png,svg}       N* against L (log scale) per model and format (Figures 2-5);
//                             sum of N*_n and N*_joint against L with kappa (Figures 6-7);
//                             accuracy against length; each with its .dat and .gp files
//   trials.{md,csv}           every training in the store, one row per configuration
//   report.md                 an index of all of the above
// Only what the store holds is written; figures need gnuplot (skipped with a note if absent).

// The columns of one training (N, lr, seed, status, steps, losses, accuracies, seconds): the
// train study's table and the report's trials table.
std::vector<std::string> trial_columns();
std::vector<std::string> trial_row(const TrialSpec& spec, const TrialResult& result);

struct ReportContext;  // report/context.hpp

// A study kind's part of the report: the outcomes of `kind` and what it draws from them
// (Study::report; the study layer's registry hands the list: study_reports()).
struct KindReport {
  std::string kind;
  std::function<void(ReportContext& context)> report;
};

// Every kind's tables and figures, in the order of `kinds`, then the trials table and report.md.
// With a reference, the published values beside ours in each table (reference_comparison.{md,csv}
// lists every one). `min_accuracy`: report.min_accuracy (ReportContext::min_accuracy).
struct Reference;
void write_reports(const Store& store, const std::filesystem::path& dir,
                   const std::vector<KindReport>& kinds, std::ostream* log,
                   const Reference* reference = nullptr, double min_accuracy = kDefaultMinAccuracy);

}  // namespace induct
