#!/usr/bin/env bash
# Builds induct_bench and prints, for each model and sequence length, training steps per
# second in C++ (LibTorch) and in Python (PyTorch, bench/reference), alternating the two, with
# achieved GFLOP/s and the percentage of the GEMM peak measured in the same run.
#
#   bench/run_bench.sh [--small] [--models lstm,gpt2] [--lengths 10,30,62] [--seconds 3] [--rounds 3]
#
# Single-threaded (one worker's setting in a study); Python is Debian's /usr/bin/python3. Each
# row alternates the two `rounds` times and keeps each language's best: on these shared VMs
# one measurement of either moves by up to 40% from one run to the next.
set -euo pipefail
cd "$(dirname "$0")/.."
small="" models="lstm,lstm768,gru,gpt2,llama,pythia,dense_ssm,mamba,mamba2,deltanet,xlstm" lengths="10,30,62" seconds=3 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --small) small="--small"; models="lstm,gru,gpt2,llama,pythia,dense_ssm,mamba,mamba2,deltanet,xlstm"; shift ;;
    --models) models=$2; shift 2 ;;
    --lengths) lengths=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
cmake --build build --target induct_bench > /dev/null
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
bench=build/bin/induct_bench
python=/usr/bin/python3
peak=$($bench --peak-only --seconds "$seconds" | awk '{print $2}')
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), 1 thread; float32 GEMM peak ${peak} GFLOP/s (the faster of OpenBLAS and oneDNN)"
echo "sizes: ${small:-paper} (batch 64, vocabulary 12); best of ${rounds} alternating rounds of ${seconds} s"
printf "%-10s %10s %6s %10s %10s %6s %9s %7s\n" model params tokens "C++ st/s" "Py st/s" ratio "GFLOP/s" "% peak"
for model in ${models//,/ }; do
  for length in ${lengths//,/ }; do
    cpp="" py=""
    for ((round = 0; round < rounds; round++)); do  # keep the line with the most steps/s (field 8)
      cpp=$(printf '%s\n%s\n' "$cpp" "$($bench --models "$model" --lengths "$length" --seconds "$seconds" $small)" |
        awk 'NF' | sort -g -k8,8 | tail -1)
      py=$(printf '%s\n%s\n' "$py" "$($python bench/reference/bench_models.py --model "$model" --length "$length" --seconds "$seconds" $small)" |
        awk 'NF' | sort -g -k8,8 | tail -1)
    done
    echo "$cpp" "$py" | awk -v peak="$peak" '{
      printf "%-10s %10d %6d %10.2f %10.2f %6.2f %9.1f %6.0f%%\n", $2, $4, $6, $8, $18, $8 / $18, $10, 100 * $10 / peak }'
  done
done
