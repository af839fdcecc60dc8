#!/usr/bin/env bash
# Training steps per second of the same model as a C++ plugin, as a TorchScript file run by
# induct (examples/torchscript-model/make_model.py, scripted with Debian's python3-torch) and as
# that module in eager PyTorch (bench/torchscript_python.py), alternating the three `rounds`
# times and keeping each one's best; one thread, batch 64, vocabulary 12.
#
#   bench/torchscript_bench.sh [--lengths 10,62] [--seconds 3] [--rounds 3]
#
# Pairs: in-tree lstm 64 / make_model.py's Lstm 64; lstm 256 / Lstm 256; gpt2 2 layers d64
# without dropout / make_model.py's Transformer (the same sizes: pre-norm, GELU MLP of 4x,
# learned positions, biases; its head is not tied to the embedding: 780 parameters more).
set -euo pipefail
cd "$(dirname "$0")/.."
lengths="10,62" seconds=3 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --lengths) lengths=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
cmake --build build --target induct_bench induct_torchscript > /dev/null
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
bench=build/bin/induct_bench
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/64" "$dir/256"
/usr/bin/python3 examples/torchscript-model/make_model.py --out "$dir/64" --hidden 64 > /dev/null 2>&1
/usr/bin/python3 examples/torchscript-model/make_model.py --out "$dir/256" --hidden 256 > /dev/null 2>&1
pairs=(
  "lstm 64|{name: lstm, hidden: 64}|{name: torchscript, file: $dir/64/lstm.pt}|--model lstm --hidden 64"
  "lstm 256|{name: lstm, hidden: 256}|{name: torchscript, file: $dir/256/lstm.pt}|--model lstm --hidden 256"
  "gpt2 2L d64|{name: gpt2, layers: 2, d_model: 64, heads: 4, d_ff: 256, dropout: 0}|{name: torchscript, file: $dir/64/transformer.pt}|--model transformer"
)
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), 1 thread; best of ${rounds} alternating rounds of ${seconds} s"
printf "%-12s %15s %6s %10s %12s %10s %8s %8s\n" model "params C++/TS" tokens "C++ st/s" "TorchScript" "Python" "C++/TS" "TS/Py"
for pair in "${pairs[@]}"; do
  IFS='|' read -r label plugin script python <<< "$pair"
  for length in ${lengths//,/ }; do
    cpp="" ts="" py=0
    for ((round = 0; round < rounds; round++)); do  # the line with the most steps/s (field 8)
      cpp=$(printf '%s\n%s\n' "$cpp" "$($bench --models "" --model "$plugin" --lengths "$length" --seconds "$seconds")" |
        awk 'NF' | sort -g -k8,8 | tail -1)
      ts=$(printf '%s\n%s\n' "$ts" "$($bench --models "" --model "$script" --lengths "$length" --seconds "$seconds")" |
        awk 'NF' | sort -g -k8,8 | tail -1)
      # shellcheck disable=SC2086
      p=$(/usr/bin/python3 bench/torchscript_python.py $python --length "$length" --seconds "$seconds" 2> /dev/null | awk '{print $2}')
      py=$(echo "if ($p > $py) $p else $py" | bc -l)
    done
    read -r _ _ _ params _ _ _ c _ <<< "$cpp"
    read -r _ _ _ tparams _ _ _ t _ <<< "$ts"
    printf "%-12s %15s %6s %10.1f %12.1f %10.1f %8.2f %8.2f\n" "$label" "$params/$tparams" "$length" "$c" "$t" "$py" \
      "$(echo "$c / $t" | bc -l)" "$(echo "$t / $py" | bc -l)"
  done
done
