// The marks of N* as the paper prints them.
#pragma once

#include <cstdint>
#include <string>

#include "util/text.hpp"

namespace induct {

// The paper's "not learned" mark.
inline const std::string kNotLearned = "\u2013";  // en dash

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
