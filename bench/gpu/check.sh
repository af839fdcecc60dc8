#!/usr/bin/env bash
# The GPU checks of docs/gpu.md, as one script for a machine with a CUDA GPU, PyTorch (its
# LibTorch and CMake package), CMake, ninja and a compiler, but no Boost or yaml-cpp:
#
#   bench/gpu/fetch_debs.sh                  # on a Debian 12 machine first: .gpu-debs/
#   bench/gpu/check.sh OUT                   # on the GPU machine, from the repository root
#
# Made for the 15 minutes of device time a task may be lent, machine start included: it ends
# within LIMIT seconds (default 540), most valuable step first, each step under its own time
# limit (cut to what is left of LIMIT) and its result written to OUT/summary.txt before the
# next starts:
#   1. configure against python3's LibTorch (or $TORCH_DIR) and build only induct, the in-tree
#      plugins, induct_bench and test_device (240 s);
#   2. test_device: every in-tree model on the GPU against the CPU's kernels (60 s);
#   3. induct_bench: LSTM 256, GPT-2 6L and Mamba at 10 and 30 tokens, with 1, 4 and 8
#      trainings sharing the device at once (processes measuring in the same windows, as
#      `run.workers` runs them): each one's steps/s and their sum (150 s);
#   4. the quickstart with run.device=$DEVICE (120 s; stopped there, it says how far it got);
#   5. `induct validate --time` on 4 cells of the block of docs/performance.md section 6 (40 s).
# Logs in OUT: build.log, test_device.log, bench.txt, quickstart.log, quickstart_trials.csv,
# block_time.txt, summary.txt. DEVICE=cpu runs the same steps on the CPU (to try the script on
# a machine without a GPU; test_device then compares with the CPU's double precision).
set -uo pipefail
out=${1:?usage: bench/gpu/check.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
device=${DEVICE:-cuda}
limit=${LIMIT:-540}
prefix=${PREFIX:-/tmp/induct-prefix}
build=${BUILD:-/tmp/induct-build-gpu}
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
started=$(date +%s)
elapsed() { echo "$(($(date +%s) - started))s"; }
# A step's time limit: its own, or what is left of LIMIT (at least 1 s).
budget() {
  local left=$((limit - ($(date +%s) - started)))
  ((left < 1)) && left=1
  echo $(($1 < left ? $1 : left))
}
# rc 124: the step ran out of its time.
verdict() { [ "$1" -eq 124 ] && echo "stopped at its time limit" || echo "rc $1"; }

mkdir -p "$prefix"
for f in .gpu-debs/*.deb; do
  [ -e "$f" ] || { note "no .gpu-debs/*.deb: run bench/gpu/fetch_debs.sh first"; exit 1; }
  dpkg -x "$f" "$prefix" || { note "cannot unpack $f"; exit 1; }
done
libdir="$prefix/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

torch_dir=${TORCH_DIR:-$(python3 -c 'import torch, os; print(os.path.join(torch.utils.cmake_prefix_path, "Torch"))')}
note "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' 2>&1 | tail -1)"
note "Torch_DIR: $torch_dir; prefix: $prefix; device: $device; cores: $(nproc); limit: ${limit}s"
command -v nvidia-smi > /dev/null &&
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /' | tee -a "$summary"

# 1. Configure and build what the later steps run.
cuda_arch=()
[ "$device" = cpu ] || cuda_arch=(-DCMAKE_CUDA_ARCHITECTURES=native)
timeout "$(budget 240)" bash -c '
  cmake -S . -B "$0" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$1" \
    -DCMAKE_PREFIX_PATH="$2/usr" "${@:3}" ${CMAKE_EXTRA:-} &&
  cmake --build "$0" -j "$(nproc)" --target induct induct_bench test_device' \
  "$build" "$torch_dir" "$prefix" "${cuda_arch[@]}" > "$out/build.log" 2>&1
built=$?
grep -E "LibTorch|SDK GEMM|CMake Error" "$out/build.log" | tee -a "$summary"
note "1. build: $(verdict $built) at $(elapsed)"
[ $built -eq 0 ] || { tail -40 "$out/build.log"; exit 1; }
export INDUCT_PLUGIN_PATH="$build/lib/induct/plugins"

# 2. The models on the device against the CPU's kernels.
test_device=cuda
[ "$device" = cpu ] && test_device=cpu
INDUCT_TEST_DEVICE=$test_device OMP_NUM_THREADS=1 timeout "$(budget 60)" \
  "$build/bin/test_device" --color_output=no > "$out/test_device.log" 2>&1
rc=$?
note "2. test_device ($test_device): $(verdict $rc) at $(elapsed): $(grep -E 'No errors|failure|error' "$out/test_device.log" | tail -1)"
grep -E "^\{name" "$out/test_device.log" >> "$summary"

# 3. Training steps/s with 1, 4 and 8 trainings on the device at once: the processes of one
# round start together and measure each (model, length) in the same windows of 3 s.
bench="$build/bin/induct_bench"
: > "$out/bench.txt"
for workers in 1 4 8; do
  seconds=$(budget 60)
  ((seconds < 20)) && { note "3. bench: no time left for $workers at once"; break; }
  start_at=$(($(date +%s) + 12))  # process start, plugins, the device's context
  for ((w = 0; w < workers; ++w)); do
    timeout "$seconds" "$bench" --device "$device" --models lstm,gpt2,mamba --lengths 10,30 \
      --seconds 3 --gap 3 --start-at "$start_at" 2>&1 | sed "s/^/workers $workers /" > "$out/bench.$w" &
  done
  wait
  cat "$out"/bench.[0-9]* >> "$out/bench.txt"
  rm -f "$out"/bench.[0-9]*
done
note "3. bench at $(elapsed): steps/s per training (sum over the trainings sharing the device)"
awk '$3 == "model" {
    key = sprintf("%-6s %3s tokens, %s at once", $4, $8, $2)
    if (!(key in n)) order[++k] = key
    n[key]++; sum[key] += $10; late[key] += ($(NF) > 0.5)
  }
  END {
    for (i = 1; i <= k; ++i)
      printf "  %s: %.1f each, %.1f together%s\n", order[i], sum[order[i]] / n[order[i]],
        sum[order[i]], late[order[i]] ? " (" late[order[i]] " started late)" : ""
  }' "$out/bench.txt" | tee -a "$summary"

# 4. The quickstart on the device (4 workers per GPU by default).
rm -rf /tmp/induct-quickstart-gpu
timeout "$(budget 120)" "$build/bin/induct" run configs/quickstart.yaml --set run.device="$device" \
  --out /tmp/induct-quickstart-gpu > "$out/quickstart.log" 2>&1
rc=$?
note "4. quickstart: $(verdict $rc) at $(elapsed): $(grep -E 'finished in|stopped|error' "$out/quickstart.log" | tail -1)"
cp /tmp/induct-quickstart-gpu/trials.csv "$out/quickstart_trials.csv" 2>/dev/null
grep -A12 "^model" "$out/quickstart.log" | head -12 | tee -a "$summary"

# 5. Step rates of 4 cells of the block (Fixed L = 5, 10, 20, 30) and their failing steps.
timeout "$(budget 40)" "$build/bin/induct" validate bench/block/lstm256_parity_outcome.yaml --time \
  --cells 1-4 --set run.device="$device" > "$out/block_time.log" 2>&1
rc=$?
sed -n '/^time:/,/machine load/p' "$out/block_time.log" > "$out/block_time.txt"
note "5. block --time: $(verdict $rc) at $(elapsed)"
tee -a "$summary" < "$out/block_time.txt"
note "done at $(elapsed) of ${limit}s"
