// The N* searches of a study's cells, side by side on the workers (docs/method.md section 5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "study/nstar_search.hpp"
#include "study/step.hpp"

namespace induct {

// One cell's N* search, as run_searches leaves it.
struct SearchRecord {
  bool complete = true;  // false: a trial error left a step undecided; rerun to retry
  bool learned = false;
  uint64_t nstar = 0, n_max = 0;
  size_t steps = 0;                // sizes tested
  size_t trained = 0;              // trials run now (not reused)
  int64_t optimisation_steps = 0;  // of every trial the steps used, reused ones included
  bool stored = false;             // the whole search came from the store
  // Every failure on the search's path is proven: no configuration was stopped by the failure
  // detector, or those it stopped failed again without it (search.certify). false: one is the
  // detector's verdict, and N* an upper bound (docs/method.md section 5a).
  bool certified = true;
  size_t certification_steps = 0;  // failures re-run without the detector
};
// "N* = 12", "not learned at N_max = 500", "... (stored)", "incomplete (...)"; an uncertified
// N* says so.
std::string describe(const SearchRecord& record);

// Everything that decides a cell's N*: the cell, the grid, training and search settings.
std::string nstar_key(const StudyConfig& config, const SearchSettings& search,
                      const PreparedCell& cell);
// The settings an N* is found with (training, learning rates, seeds, search): part of its key,
// and stored with it (`settings`, the store's outcome columns max_steps, epsilon, settings).
YAML::Node nstar_settings(const StudyConfig& config, const SearchSettings& search);

// The N* searches of every cell (docs/method.md section 5), side by side on the runner's workers,
// reusing stored trials and stored searches; each finished search is stored and logged.
// Returns the records in cell order.
std::vector<SearchRecord> run_searches(StudyRun& run, const std::vector<PreparedCell>& cells,
                                       const SearchSettings& search);

}  // namespace induct
