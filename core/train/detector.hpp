// The failure detector: when a training stops as failed before its step limit.
#pragma once

#include <vector>

#include "train/settings.hpp"
#include "train/trial.hpp"

namespace induct {

// The failure detector of TrainSettings (its rules are described there): whether a run
// should stop as failed after the evaluation that ends `history`, whose best validation loss
// so far is `best_loss`, for a cell whose chance loss is `chance_loss`. A function of these
// alone, so a stored history replays to the verdict the trainer gave (bench/detector).
enum class Verdict { kGoOn, kStalled, kMemorised, kPlateau };
const char* to_string(Verdict verdict);  // "" for kGoOn, else the rule's name
Verdict failure_verdict(const std::vector<EvalPoint>& history, double best_loss, double chance_loss,
                        const TrainSettings& settings);

// Whether a training with these settings would have gone on past the end of `history`, with
// the same evaluations (no success, no verdict of its own detector at any of them, the last at
// one of its own evaluation steps), so that it may go on from there as if run from the start.
bool reaches(const std::vector<EvalPoint>& history, double chance, const TrainSettings& settings);

}  // namespace induct
