#include "report/nstar_marks.hpp"

#include "util/text.hpp"

namespace induct {

std::string format_nstar(bool learned, uint64_t nstar, bool certified) {
  if (!learned) return certified ? kNotLearned : kNotLearned + " (detector)";
  return (certified ? "" : "<=") + format_count(nstar);
}

}  // namespace induct
