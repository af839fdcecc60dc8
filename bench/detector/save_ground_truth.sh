#!/bin/sh
# Saves the ground-truth stores of OUT_DIR (run_ground_truth.sh's folder, finished or not) as
# bench/detector/results/<study>.sqlite.gz, from which run_ground_truth.sh resumes elsewhere.
#   bench/detector/save_ground_truth.sh [OUT_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-runs/ground_truth}
mkdir -p "$here/results"
for store in "$out"/gt_*/results.sqlite; do
  [ -f "$store" ] || continue
  s=$(basename "$(dirname "$store")")
  # One self-contained file: the WAL folded in, cancelled rows (rerun on resume anyway) left out.
  tmp=$(mktemp)
  sqlite3 "$store" "VACUUM INTO '$tmp.db'"
  sqlite3 "$tmp.db" "DELETE FROM trials WHERE status IN ('cancelled', 'error'); VACUUM;"
  gzip -9 -n -c "$tmp.db" > "$here/results/$s.sqlite.gz"
  rm -f "$tmp" "$tmp.db"
  echo "$s: $(sqlite3 "$store" "SELECT count(*) FROM trials WHERE status NOT IN ('cancelled', 'error')") finished trials -> results/$s.sqlite.gz"
done
