#!/bin/sh
# The tables of docs/performance.md section 4: the ground-truth stores (a folder of
# <study>/results.sqlite, or the saved results/*.sqlite.gz when none is given), then each rule
# set replayed by detector_check on all of them, one markdown row per rule set.
#   bench/detector/rules_table.sh [OUT_DIR]
# PLATEAU_LEVEL=validation replays with the chance loss of each validation set instead of the
# task's (training.plateau_level).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
check="$root/build/bin/detector_check"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -gt 0 ]; then
  stores=$(ls "$1"/gt_*/results.sqlite)
else
  for f in "$here"/results/*.sqlite.gz; do gunzip -c "$f" > "$tmp/$(basename "$f" .gz)"; done
  stores=$(ls "$tmp"/*.sqlite)
fi
echo "| store | N | longest run (steps) | configurations | succeeded |"
echo "|---|---|---|---|---|"
for db in $stores; do
  name=$(basename "$db" .sqlite)
  [ "$name" = results ] && name=$(basename "$(dirname "$db")")
  q="FROM trials WHERE status NOT IN ('cancelled', 'error')"
  echo "| $name | $(sqlite3 "$db" "SELECT group_concat(n, ', ') FROM (SELECT DISTINCT n $q ORDER BY n DESC)") \
| $(sqlite3 "$db" "SELECT max(steps) $q") | $(sqlite3 "$db" "SELECT count(*) $q") \
| $(sqlite3 "$db" "SELECT count(*) $q AND status = 'succeeded'") |"
done
echo
level=${PLATEAU_LEVEL:-task}
base="--improvement 0.1 --projection 0 --margin 0.2 --plateau-level $level --project-to 250000"
echo "| rules (improvement 0.1, no projection, plateau margin 0.2 of the $level chance loss) | false failures | failures stopped | steps saved (ground truth's limit) | steps saved at 250,000 |"
echo "|---|---|---|---|---|"
while IFS='|' read -r label rules; do
  # shellcheck disable=SC2086
  out=$("$check" $stores $base $rules -q 2>&1 || true)
  totals=$(echo "$out" | grep '^configurations')
  succ=$(echo "$totals" | sed 's/.*: \([0-9]*\) succeeded.*/\1/')
  ff=$(echo "$totals" | sed 's/.*(\([0-9]*\) of them stopped first.*/\1/')
  fails=$(echo "$totals" | sed 's/.* \([0-9]*\) failed within the limit.*/\1/')
  stopped=$(echo "$totals" | sed 's/.*limit (\([0-9]*\) stopped.*/\1/')
  saved=$(echo "$out" | grep '^optimisation' | sed 's/.*(\(.*\) saved)/\1/')
  projected=$(echo "$out" | grep '^at a limit' | sed 's/.*(\(.*\) saved)/\1/')
  [ "$ff" = 0 ] && ffs="0 of $succ" || ffs="**$ff of $succ**"
  echo "| $label | $ffs | $stopped of $fails | $saved | $projected |"
done <<'RULES'
window 1000, fraction 0.5|--window 1000 --fraction 0.5
window 5000, fraction 0.5|--window 5000 --fraction 0.5
window 8000, fraction 0.5|--window 8000 --fraction 0.5
window 8000, fraction 0.5, memorised 1e-4|--window 8000 --fraction 0.5 --memorised 1e-4
window 10000, fraction 0.5, memorised 1e-4|--window 10000 --fraction 0.5 --memorised 1e-4
window 20000, fraction 0.5, memorised 1e-4|--window 20000 --fraction 0.5 --memorised 1e-4
window 40000, fraction 0.5, memorised 1e-4|--window 40000 --fraction 0.5 --memorised 1e-4
window 60000, fraction 0.5, memorised 1e-4|--window 60000 --fraction 0.5 --memorised 1e-4
window 120000, fraction 0.5, memorised 1e-4|--window 120000 --fraction 0.5 --memorised 1e-4
RULES
echo
# The configurations replayed (the same for every rule set), from the last one's totals.
echo "stores: $(echo $stores | wc -w); configurations $(echo "$totals" | sed 's/^configurations \([0-9]*\): \([0-9]*\) succeeded.*/\1, \2 succeeded/')"
