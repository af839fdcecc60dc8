#!/usr/bin/env bash
# The search-cost study: one nstar or sharing study run three ways into one folder, and the
# optimisation steps each needed for the same N*:
#   1. induct's default: the first success of a step cancels the rest (into an empty folder,
#      so its cost is its own);
#   2. the paper's procedure: every configuration of a step to its own stop
#      (search.cancel_on_success=false); it reuses the trials run 1 finished and trains the
#      ones run 1 cancelled, so its cost is what the paper's procedure needs;
#   3. with the failure detector (training.stall_window=WINDOW, default 200, and
#      training.stall_improvement=IMPROVEMENT, default 0.1): new trials.
#   bench/search_cost.sh CONFIG [WINDOW [IMPROVEMENT [--set key=value ...]]]
# Extra --set arguments apply to all three runs (e.g. the paper's grid of 15 configurations).
set -euo pipefail
cd "$(dirname "$0")/.."
config=$1
window=${2:-200}
improvement=${3:-0.1}
shift $(( $# < 3 ? $# : 3 ))
out=runs/search_cost_$(basename "$config" .yaml)
induct=build/bin/induct
rm -rf "$out"
$induct run "$config" --out "$out" "$@" > "$out.cancel.log" 2>&1 || { cat "$out.cancel.log"; exit 1; }
$induct run "$config" --out "$out" "$@" --set search.cancel_on_success=false > "$out.paper.log" 2>&1 ||
  { cat "$out.paper.log"; exit 1; }
$induct run "$config" --out "$out" "$@" --set training.stall_window="$window" \
  --set training.stall_improvement="$improvement" > "$out.detector.log" 2>&1 ||
  { cat "$out.detector.log"; exit 1; }
$induct report "$out" > /dev/null
cat "$out/search_cost.md"
