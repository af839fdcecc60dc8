#include "study/nstar/marks.hpp"

#include <set>

#include "util/text.hpp"

namespace induct {

std::string format_nstar(bool learned, uint64_t nstar, bool certified) {
  if (!learned) return certified ? kNotLearned : kNotLearned + " (detector)";
  return (certified ? "" : "<=") + format_count(nstar);
}

bool nstar_certified(const YAML::Node& outcome) {
  if (outcome["failures"]) return outcome["certified"].as<bool>(false);
  if (outcome["stall_window"].as<int64_t>(0) == 0) return true;
  // Stored before each failure on the path was checked: proven only where every failure was
  // re-run without the detector and failed again.
  std::set<uint64_t> rerun;
  for (const auto& row : outcome["certification"])
    if (!row[1].as<bool>()) rerun.insert(row[0].as<uint64_t>());
  for (const auto& row : outcome["steps"])
    if (!row[1].as<bool>() && !rerun.count(row[0].as<uint64_t>())) return false;
  return true;
}

}  // namespace induct
