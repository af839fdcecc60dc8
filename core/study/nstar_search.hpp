// The N* search of docs/method.md section 5, as a pure function of "does N succeed?".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "config/study_config.hpp"

namespace induct {

// The N* search of docs/method.md section 5: the `search:` section of nstar and sharing studies.
struct SearchSettings {
  double factor = 1000;     // M: the geometric phase divides N by M while N succeeds
  int max_steps = 20;       // tested sizes in all, N_max included
  double tolerance = 0.02;  // binary phase stops when hi - lo <= max(1, tolerance * hi)
  // One success decides a step, so the first cancels the others (project decision; false
  // trains every configuration to its own stop, as the paper's procedure: same N*, more cost).
  bool cancel_on_success = true;
  // Re-run each failed step in which the failure detector stopped a configuration, those
  // configurations with the detector off, before the search learns its outcome: the search
  // then takes the paper's path and ends at its N* (docs/method.md section 5a).
  bool certify = false;
};

SearchSettings read_search(const Options& search);

struct SearchStep {
  uint64_t n = 0;
  bool success = false;
};

struct SearchOutcome {
  bool learned = false;  // N_max succeeded
  uint64_t nstar = 0;    // the smallest success found (0 when not learned)
  uint64_t largest_failure = 0;
  std::vector<SearchStep> steps;
};

// The search as a state machine, so that many cells' searches can share the workers: ask
// next() for the size to test, report() whether it succeeded, until next() is empty.
class NstarSearch {
 public:
  NstarSearch(uint64_t n_max, const SearchSettings& settings);
  std::optional<uint64_t> next() const;  // nullopt: the search is over
  void report(bool success);             // the outcome of the size next() gave
  const SearchOutcome& outcome() const { return out_; }

 private:
  enum class Phase { kMax, kGeometric, kBinary, kDone };
  void advance();
  SearchSettings settings_;
  SearchOutcome out_;
  Phase phase_ = Phase::kMax;
  uint64_t hi_ = 0, lo_ = 0;  // hi: smallest success; lo: largest failure (0: none yet)
  uint64_t next_ = 0;
};

// Tries N_max; if it fails the cell is not learned. Otherwise divides by `factor` while
// sizes succeed (never below 1), then bisects between the largest failure and the smallest
// success until hi - lo <= max(1, tolerance * hi) or max_steps sizes have been tried.
// N* is the smallest success. `succeeds` is called once per tested size, in order.
SearchOutcome search_nstar(uint64_t n_max, const SearchSettings& settings,
                           const std::function<bool(uint64_t n)>& succeeds);

}  // namespace induct
