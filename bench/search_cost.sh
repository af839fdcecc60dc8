#!/usr/bin/env bash
# The search-cost study: one nstar or sharing study run four ways into one folder, and the
# optimisation steps each needed for the same N*:
#   1. induct's default: the first success of a step cancels the rest (into an empty folder,
#      so its cost is its own);
#   2. the paper's procedure: every configuration of a step to its own stop
#      (search.cancel_on_success=false); it reuses the trials run 1 finished and trains the
#      ones run 1 cancelled or never started, so its cost is what the paper's procedure needs;
#   3. with the failure detector's stall rule (training.stall_window=WINDOW, default 200, and
#      training.stall_improvement=IMPROVEMENT, default 0.1): new trials;
#   4. with its projection rule too (training.stall_projection=PROJECTION, default 2).
#   bench/search_cost.sh CONFIG [WINDOW [IMPROVEMENT [PROJECTION [--set key=value ...]]]]
# Extra --set arguments apply to all four runs (e.g. the paper's grid of 15 configurations).
# PLATEAU_LEVEL=validation sets training.plateau_level for runs 3 and 4 (default task).
set -euo pipefail
cd "$(dirname "$0")/.."
config=$1
window=${2:-200}
improvement=${3:-0.1}
projection=${4:-2}
shift $(( $# < 4 ? $# : 4 ))
out=runs/search_cost_$(basename "$config" .yaml)
induct=${INDUCT:-build/bin/induct}
rm -rf "$out"
run() {  # LOG ARGS...: one run into $out, its log kept, shown when it fails
  local log=$out.$1.log
  shift
  $induct run "$config" --out "$out" "$@" > "$log" 2>&1 || { cat "$log"; exit 1; }
  tail -n 1 "$log"
}
detector=(--set training.stall_window="$window" --set training.stall_improvement="$improvement"
  --set training.plateau_level="${PLATEAU_LEVEL:-task}")
run cancel "$@"
run paper "$@" --set search.cancel_on_success=false
run detector "$@" "${detector[@]}"
run projection "$@" "${detector[@]}" --set training.stall_projection="$projection"
$induct report "$out" > /dev/null
cat "$out/search_cost.md"
