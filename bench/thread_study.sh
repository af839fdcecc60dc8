#!/usr/bin/env bash
# How to spend the cores: training throughput of one model under each way of using them.
#   bench/thread_study.sh [--model lstm] [--length 20] [--seconds 5] [--small]
# Rows: one single-threaded run; one run with more LibTorch (OpenMP) or BLAS threads; one
# single-threaded run per core side by side (what a study's worker pool does by default).
set -euo pipefail
cd "$(dirname "$0")/.."
model=lstm length=20 seconds=5 small=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --length) length=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --small) small="--small"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
cmake --build build --target induct_bench > /dev/null
cores=$(nproc)
rate() {  # OMP BLAS -> steps/s of one run
  OMP_NUM_THREADS=$1 OPENBLAS_NUM_THREADS=$2 build/bin/induct_bench --models "$model" \
    --lengths "$length" --seconds "$seconds" --threads "$1" $small | awk '{print $8}'
}
echo "model $model ${small:-paper size}, $length tokens, batch 64; $cores cores ($(lscpu | sed -n 's/^Model name: *//p'))"
printf "%-44s %12s %9s\n" "setting" "steps/s" "vs 1x1"
base=$(rate 1 1)
printf "%-44s %12.2f %9.2f\n" "1 run, 1 LibTorch thread, 1 BLAS thread" "$base" 1
for setting in "1 $cores" "$cores 1" "$cores $cores"; do
  set -- $setting
  r=$(rate "$1" "$2")
  printf "%-44s %12.2f %9.2f\n" "1 run, $1 LibTorch thread(s), $2 BLAS thread(s)" "$r" "$(awk -v a="$r" -v b="$base" 'BEGIN{print a/b}')"
done
# One single-threaded run per core, at the same time.
tmp=$(mktemp -d)
for i in $(seq "$cores"); do rate 1 1 > "$tmp/$i" & done
wait
total=$(cat "$tmp"/* | awk '{s += $1} END {print s}')
rm -rf "$tmp"
printf "%-44s %12.2f %9.2f\n" "$cores runs side by side, 1 thread each (total)" "$total" "$(awk -v a="$total" -v b="$base" 'BEGIN{print a/b}')"
