#include "study/search.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace induct {

SearchOutcome search_nstar(uint64_t n_max, const SearchSettings& settings,
                           const std::function<bool(uint64_t n)>& succeeds) {
  if (n_max < 1) throw std::invalid_argument("N* search: N_max must be at least 1");
  if (!(settings.factor > 1)) throw std::invalid_argument("N* search: factor must exceed 1");
  if (settings.max_steps < 1) throw std::invalid_argument("N* search: max_steps must be >= 1");
  SearchOutcome out;
  auto test = [&](uint64_t n) {
    bool ok = succeeds(n);
    out.steps.push_back({n, ok});
    return ok;
  };
  auto budget_left = [&] { return static_cast<int>(out.steps.size()) < settings.max_steps; };

  if (!test(n_max)) return out;  // "not learned"
  out.learned = true;
  uint64_t hi = n_max, lo = 0;  // hi: smallest success; lo: largest failure (0: none yet)
  // Geometric phase.
  while (budget_left() && hi > 1) {
    const auto n = std::max<uint64_t>(1, static_cast<uint64_t>(std::floor(hi / settings.factor)));
    if (test(n)) {
      hi = n;
    } else {
      lo = n;
      break;
    }
  }
  // Binary phase between the largest failure and the smallest success.
  auto close_enough = [&] {
    const double gap = static_cast<double>(hi - lo);
    return gap <= std::max(1.0, settings.tolerance * static_cast<double>(hi));
  };
  while (lo > 0 && budget_left() && !close_enough()) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (test(mid))
      hi = mid;
    else
      lo = mid;
  }
  out.nstar = hi;
  out.largest_failure = lo;
  return out;
}

}  // namespace induct
