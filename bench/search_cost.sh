#!/usr/bin/env bash
# The search-cost study: one nstar or sharing study run three ways into one folder, and the
# optimisation steps each needed for the same N*:
#   1. the paper's procedure: every configuration of a step to its own stop
#      (search.cancel_on_success=false);
#   2. induct's default: the first success of a step cancels the rest;
#   3. with the failure detector (training.stall_window=WINDOW, default 500).
# Runs 2 and 3 reuse what earlier runs stored where their trials coincide.
#   bench/search_cost.sh configs/mini/outcome_parity.yaml [WINDOW]
set -euo pipefail
cd "$(dirname "$0")/.."
config=$1
window=${2:-500}
out=runs/search_cost_$(basename "$config" .yaml)
induct=build/bin/induct
$induct run "$config" --out "$out" --set search.cancel_on_success=false > "$out.paper.log" 2>&1 ||
  { cat "$out.paper.log"; exit 1; }
$induct run "$config" --out "$out" > "$out.cancel.log" 2>&1 || { cat "$out.cancel.log"; exit 1; }
$induct run "$config" --out "$out" --set training.stall_window="$window" > "$out.detector.log" 2>&1 ||
  { cat "$out.detector.log"; exit 1; }
$induct report "$out" > /dev/null
cat "$out/search_cost.md"
