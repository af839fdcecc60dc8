#include "train/detector.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace induct {

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::kGoOn:
      return "";
    case Verdict::kStalled:
      return "stalled";
    case Verdict::kMemorised:
      return "memorised";
    case Verdict::kPlateau:
      return "plateau";
  }
  return "";
}

Verdict failure_verdict(const std::vector<EvalPoint>& history, double best_loss, double chance_loss,
                        const TrainSettings& settings) {
  const int64_t window = settings.stall_window;
  if (window <= 0 || history.empty()) return Verdict::kGoOn;
  const int64_t now = history.back().step;
  const bool on_plateau =
      chance_loss > 0 && best_loss >= (1.0 - settings.plateau_margin) * chance_loss;
  if (on_plateau && settings.plateau_patience > 0 && now >= settings.plateau_patience)
    return Verdict::kPlateau;
  if (now < window) return Verdict::kGoOn;
  // The window: stall_window steps, or the last stall_fraction of the run when longer (a run
  // at step 20,000 is judged on its progress since step 10,000 with a fraction of 0.5).
  const auto span = std::max<int64_t>(
      window, static_cast<int64_t>(settings.stall_fraction * static_cast<double>(now)));
  // The best loss now against the best loss a window ago.
  double best_then = std::numeric_limits<double>::infinity();
  for (const EvalPoint& p : history)
    if (p.step <= now - span) best_then = std::min(best_then, p.val_loss);
  if (!std::isfinite(best_then)) return Verdict::kGoOn;
  const bool flat = best_loss > best_then * (1.0 - settings.stall_improvement);
  if (flat && settings.memorised_loss > 0 && history.back().train_loss < settings.memorised_loss)
    return Verdict::kMemorised;
  if (on_plateau) return Verdict::kGoOn;
  if (flat) return Verdict::kStalled;
  if (settings.stall_projection <= 0) return Verdict::kGoOn;
  // Falling on at stall_projection times the window's rate, where would it be at max_steps?
  const double rate = (std::log(best_then) - std::log(best_loss)) / static_cast<double>(span);
  const auto remaining = static_cast<double>(settings.max_steps - now);
  return std::log(best_loss) - settings.stall_projection * rate * remaining >
                 std::log(settings.epsilon)
             ? Verdict::kStalled
             : Verdict::kGoOn;
}

bool reaches(const std::vector<EvalPoint>& history, double chance, const TrainSettings& settings) {
  const int64_t last = history.back().step;
  if (last > settings.max_steps || (last % settings.eval_every != 0 && last != settings.max_steps))
    return false;
  std::vector<EvalPoint> prefix;
  double best = std::numeric_limits<double>::infinity();
  for (const EvalPoint& p : history) {
    if (!std::isfinite(p.val_loss) || p.val_loss < settings.epsilon) return false;
    prefix.push_back(p);
    best = std::min(best, p.val_loss);
    if (p.step < settings.max_steps &&
        failure_verdict(prefix, best, chance, settings) != Verdict::kGoOn)
      return false;
  }
  return true;
}

}  // namespace induct
