// Why a cell was not learned, from the trials of its last search step (at N_max): the budget
// (a configuration got every final state right, but its loss did not reach epsilon within
// max_steps), the failure detector, chance (no configuration beat it), or partial learning.
// Torch-free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/store.hpp"

namespace induct {

enum class NotLearned {
  kUnknown,   // no finished trial of the cell at N_max with the outcome's settings
  kDetector,  // the failure that decides it is the failure detector's verdict (not certified)
  kBudget,    // some configuration's final-state accuracy is 1, its loss >= epsilon
  kChance,    // every configuration's final-state accuracy within 0.1 of chance (normalized)
  kPartial,   // above chance, but no configuration got every final state right
};

struct NotLearnedReason {
  NotLearned why = NotLearned::kUnknown;
  double best_final_accuracy = 0;  // over the configurations at N_max
  size_t configurations = 0;       // finished trials it rests on
};

// The store's trials by their cell's key (cell_key(spec.cell)), computed once for every
// outcome a report or a run asks about.
using TrialsByCell = std::map<std::string, std::vector<const StoredTrial*>>;
TrialsByCell trials_by_cell(const std::vector<StoredTrial>& trials);

// The reason of a not-learned N* outcome (its stored YAML), from the store's trials: those of
// its cell at its N_max with its settings (max_steps, epsilon, learning rates, seeds), when it
// recorded them. Outcomes without the cell's number of states (stored by earlier versions)
// are never kChance, only kPartial.
NotLearnedReason not_learned_reason(const YAML::Node& outcome, const TrialsByCell& trials);

// "budget", "chance", "partial", "detector", "" (unknown): the mark after "–" in tables.
std::string not_learned_mark(NotLearned why);
// The legend of the marks.
extern const std::string kNotLearnedLegend;

}  // namespace induct
