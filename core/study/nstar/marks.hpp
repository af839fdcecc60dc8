// N* as the paper prints it, and whether a stored N* is the paper's. Torch-free.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "util/table.hpp"

namespace induct {

// Whether a stored N* outcome is the paper's N*: every failure on its search's path is proven
// (its `certified`, docs/method.md section 5a). Outcomes without a failure detector always are;
// those stored before each failure was checked (no `failures`) only when every failure on the
// path was re-run without the detector.
bool nstar_certified(const YAML::Node& outcome);

// An N* as tables print it: "24"; "<=24" when a failure on its search's path is the failure
// detector's verdict, not proven (search.certify), so the paper's procedure might have found
// less; "–" not learned at N_max, "– (detector)" when that failure is the detector's verdict.
std::string format_nstar(bool learned, uint64_t nstar, bool certified);
// The legend of those marks.
inline const std::string kNstarLegend =
    kNotLearned + " = not learned at N_max; <=N and " + kNotLearned +
    " (detector): a failure on the search's path is the failure detector's verdict, not proven, "
    "so N* is an upper bound; search.certify: true re-runs each such failure without the "
    "detector and follows the paper's path";

}  // namespace induct
