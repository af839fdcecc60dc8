#include "study/nstar_search.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

namespace induct {

SearchSettings read_search(const Options& search) {
  SearchSettings s;
  s.factor = search.get<double>("factor", s.factor);
  if (!(s.factor > 1)) search.fail("factor", "must be greater than 1");
  s.max_steps = static_cast<int>(get_in_range(search, "max_steps", s.max_steps, 1, INT_MAX));
  s.tolerance = search.get<double>("tolerance", s.tolerance);
  if (!(s.tolerance >= 0 && s.tolerance < 1)) search.fail("tolerance", "must be in [0, 1)");
  s.cancel_on_success = search.get<bool>("cancel_on_success", s.cancel_on_success);
  s.certify = search.get<bool>("certify", s.certify);
  return s;
}

NstarSearch::NstarSearch(uint64_t n_max, const SearchSettings& settings) : settings_(settings) {
  if (n_max < 1) throw std::invalid_argument("N* search: N_max must be at least 1");
  if (!(settings.factor > 1)) throw std::invalid_argument("N* search: factor must exceed 1");
  if (settings.max_steps < 1) throw std::invalid_argument("N* search: max_steps must be >= 1");
  hi_ = next_ = n_max;
}

std::optional<uint64_t> NstarSearch::next() const {
  if (phase_ == Phase::kDone) return std::nullopt;
  return next_;
}

void NstarSearch::report(bool success) {
  if (phase_ == Phase::kDone) throw std::logic_error("N* search: report after the end");
  out_.steps.push_back({next_, success});
  switch (phase_) {
    case Phase::kMax:
      if (!success) {  // "not learned"
        phase_ = Phase::kDone;
        return;
      }
      out_.learned = true;
      phase_ = Phase::kGeometric;
      break;
    case Phase::kGeometric:
      if (success) {
        hi_ = next_;
      } else {
        lo_ = next_;
        phase_ = Phase::kBinary;
      }
      break;
    case Phase::kBinary:
      (success ? hi_ : lo_) = next_;
      break;
    case Phase::kDone:
      break;
  }
  advance();
}

// Chooses the next size, or ends the search.
void NstarSearch::advance() {
  const bool budget_left = static_cast<int>(out_.steps.size()) < settings_.max_steps;
  if (phase_ == Phase::kGeometric) {
    if (budget_left && hi_ > 1) {
      next_ = std::max<uint64_t>(1, static_cast<uint64_t>(std::floor(hi_ / settings_.factor)));
      return;
    }
  } else if (phase_ == Phase::kBinary) {
    const double gap = static_cast<double>(hi_ - lo_);
    const bool close_enough = gap <= std::max(1.0, settings_.tolerance * static_cast<double>(hi_));
    if (budget_left && !close_enough) {
      next_ = lo_ + (hi_ - lo_) / 2;
      return;
    }
  }
  phase_ = Phase::kDone;
  out_.nstar = hi_;
  out_.largest_failure = lo_;
}

SearchOutcome search_nstar(uint64_t n_max, const SearchSettings& settings,
                           const std::function<bool(uint64_t n)>& succeeds) {
  NstarSearch search(n_max, settings);
  while (auto n = search.next()) search.report(succeeds(*n));
  return search.outcome();
}

}  // namespace induct
