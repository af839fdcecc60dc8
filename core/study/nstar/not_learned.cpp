#include "study/nstar/not_learned.hpp"

#include <algorithm>
#include <cmath>

#include "study/nstar/marks.hpp"

namespace induct {

namespace {

bool listed(const YAML::Node& list, double value) {
  for (const auto& v : list)
    if (v.as<double>() == value) return true;
  return false;
}

}  // namespace

const std::string kNotLearnedLegend =
    kNotLearned +
    " (budget): at N_max some configuration got every final state right but its validation loss "
    "did not reach epsilon within max_steps (raise training.max_steps); " +
    kNotLearned +
    " (chance): no configuration's final-state accuracy beat chance by 0.1 (normalized); " +
    kNotLearned + " (partial): above chance, but no configuration got every final state right";

std::string not_learned_mark(NotLearned why) {
  switch (why) {
    case NotLearned::kBudget:
      return "budget";
    case NotLearned::kChance:
      return "chance";
    case NotLearned::kPartial:
      return "partial";
    case NotLearned::kDetector:
      return "detector";
    case NotLearned::kUnknown:
      return "";
  }
  return "";
}

TrialsByCell trials_by_cell(const std::vector<StoredTrial>& trials) {
  TrialsByCell by_cell;
  for (const StoredTrial& t : trials) by_cell[cell_key(t.spec.cell)].push_back(&t);
  return by_cell;
}

NotLearnedReason not_learned_reason(const YAML::Node& outcome, const TrialsByCell& trials) {
  NotLearnedReason reason;
  if (!outcome["cell"] || !outcome["n_max"]) return reason;
  if (!nstar_certified(outcome)) {
    reason.why = NotLearned::kDetector;
    return reason;
  }
  const auto of_cell = trials.find(cell_key(Cell::from_yaml(outcome["cell"])));
  if (of_cell == trials.end()) return reason;
  const auto n_max = outcome["n_max"].as<uint64_t>();
  const YAML::Node settings = outcome["settings"];
  bool perfect = false;
  for (const StoredTrial* trial : of_cell->second) {
    const StoredTrial& t = *trial;
    if (!t.result.finished() || t.spec.n != n_max) continue;
    if (settings && settings["training"]) {
      const YAML::Node training = settings["training"];
      if (t.spec.training.max_steps != training["max_steps"].as<int64_t>() ||
          t.spec.training.epsilon != training["epsilon"].as<double>() ||
          !listed(settings["learning_rates"], t.spec.lr) ||
          !listed(settings["seeds"], static_cast<double>(t.spec.seed)))
        continue;
    }
    ++reason.configurations;
    reason.best_final_accuracy = std::max(reason.best_final_accuracy, t.result.last.final_accuracy);
    perfect = perfect || t.result.last.final_accuracy >= 1.0;
  }
  if (reason.configurations == 0) return reason;
  if (perfect) {
    reason.why = NotLearned::kBudget;
    return reason;
  }
  reason.why = NotLearned::kPartial;
  if (outcome["states"]) {
    const double chance = 1.0 / outcome["states"].as<double>();
    if ((reason.best_final_accuracy - chance) / (1.0 - chance) <= 0.1)
      reason.why = NotLearned::kChance;
  }
  return reason;
}

}  // namespace induct
