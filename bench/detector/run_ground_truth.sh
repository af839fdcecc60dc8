#!/bin/sh
# Runs every ground-truth study of this folder (detector off), then replays a detector on each
# store: by default the block's rules (window 60,000, memorised 1e-4: in docs/performance.md
# section 4 the only rules without a false failure that save steps). Rerunning resumes: stored trials are not trained again.
#   bench/detector/run_ground_truth.sh [OUT_DIR] [DETECTOR_CHECK_OPTIONS...]
# OUT_DIR defaults to runs/ground_truth; each study writes OUT_DIR/<study name>/. A study
# whose store is not there yet starts from its saved store in results/ (save_ground_truth.sh),
# so runs on different machines add up. STUDIES="gt_a gt_b" runs only those.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-runs/ground_truth}
[ $# -gt 0 ] && shift
rules=${*:---window 60000 --improvement 0.1 --fraction 0.5 --projection 0 --margin 0.2 --memorised 1e-4}
# Cheapest first, so that an interrupted run has the most configurations.
studies=${STUDIES:-"gt_parity_outcome_fixed_l5 gt_z3_outcome_fixed_l5 gt_z5_outcome_fixed_l5
gt_gpt2_cot_parity_uniform_l10 gt_parity_outcome_fixed_l10 gt_parity_outcome_l10_uniform_s2l
gt_acot_z5_uniform_l10 gt_parity_outcome_l20 gt_long_parity_outcome_fixed_l5 gt_long_parity_outcome_fixed_l5_n26
gt_long_z3_outcome_fixed_l5 gt_long_z3_outcome_fixed_l5_n98"}
for s in $studies; do
  if [ ! -f "$out/$s/results.sqlite" ] && [ -f "$here/results/$s.sqlite.gz" ]; then
    mkdir -p "$out/$s"
    gunzip -c "$here/results/$s.sqlite.gz" > "$out/$s/results.sqlite"
    echo "$s: starting from results/$s.sqlite.gz"
  fi
  "$root/build/bin/induct" run "$here/$s.yaml" --out "$out/$s"
done
status=0
for s in $studies; do
  echo "== $s"
  # shellcheck disable=SC2086
  "$root/build/bin/detector_check" "$out/$s/results.sqlite" $rules || status=1
done
exit $status
