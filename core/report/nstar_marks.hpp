// The marks of N* as the paper prints them.
#pragma once

#include <cstdint>
#include <string>

#include "util/text.hpp"

namespace induct {

// The paper's "not learned" mark.
inline const std::string kNotLearned = "\u2013";  // en dash

// An N* as tables print it: "24"; "<=24" when a failure that decides it is the failure
// detector's verdict, not proven (search.certify); "–" not learned at N_max, "– (detector)"
// when that failure is the detector's verdict.
std::string format_nstar(bool learned, uint64_t nstar, bool certified);
// The legend of those marks.
inline const std::string kNstarLegend =
    kNotLearned + " = not learned at N_max; <=N and " + kNotLearned +
    " (detector): a failure that decides the cell (the largest failure below N*, or N_max) is "
    "the failure detector's verdict, not proven; search.certify: true re-runs it without the "
    "detector";

}  // namespace induct
