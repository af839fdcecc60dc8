#!/usr/bin/env bash
# The GPU checks of docs/gpu.md, as one script for a machine with a CUDA GPU, PyTorch (its
# LibTorch and CMake package), CMake, ninja and a compiler, but no Boost or yaml-cpp:
#
#   bench/gpu/fetch_debs.sh                  # on a Debian 12 machine first: .gpu-debs/
#   bench/gpu/check.sh OUT                   # on the GPU machine, from the repository root
#
# Unpacks .gpu-debs/*.deb into a private prefix, configures induct against python3's
# LibTorch (or $TORCH_DIR), builds with every core, runs ctest, the training-step benchmark on
# the GPU (LSTM 256, GPT-2 6L, Mamba at paper sizes; each with the loss read every 100 steps
# and after every step), and the quickstart with run.device=cuda. Every log goes to OUT:
# build.log, ctest.log, bench_cuda.txt, block_time.txt (`induct validate --time` on the block
# of docs/performance.md section 6), quickstart.log, quickstart_trials.csv, summary.txt.
# DEVICE=cpu runs the same steps on the CPU (to try the script on a machine without a GPU).
set -uo pipefail
out=${1:?usage: bench/gpu/check.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
device=${DEVICE:-cuda}
prefix=${PREFIX:-/tmp/induct-prefix}
build=${BUILD:-/tmp/induct-build-gpu}
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started ))s"; }

mkdir -p "$prefix"
for f in .gpu-debs/*.deb; do dpkg -x "$f" "$prefix" || { note "cannot unpack $f"; exit 1; }; done
libdir="$prefix/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

torch_dir=${TORCH_DIR:-$(python3 -c 'import torch, os; print(os.path.join(torch.utils.cmake_prefix_path, "Torch"))')}
note "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' 2>&1)"
note "Torch_DIR: $torch_dir; prefix: $prefix; device: $device"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /' | tee -a "$summary"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTorch_DIR="$torch_dir" -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DCMAKE_CUDA_ARCHITECTURES=native ${CMAKE_EXTRA:-} > "$out/build.log" 2>&1
configured=$?
if [ $configured -eq 0 ]; then
  cmake --build "$build" -j "$(nproc)" >> "$out/build.log" 2>&1
  built=$?
else
  built=$configured
fi
grep -E "LibTorch|SDK GEMM|CMake Error" "$out/build.log" | tee -a "$summary"
note "build: rc $built at $(elapsed)"
[ $built -eq 0 ] || { tail -40 "$out/build.log"; exit 1; }

ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600 > "$out/ctest.log" 2>&1
note "ctest: rc $? at $(elapsed): $(grep -E 'tests passed|tests failed' "$out/ctest.log")"

bench="$build/bin/induct_bench"
export INDUCT_PLUGIN_PATH="$build/lib/induct/plugins"
{
  for mode in "" "--read-every-step"; do
    echo "# --device $device $mode"
    timeout 180 "$bench" --device "$device" --models lstm,gpt2,mamba --lengths 10,30,62 --seconds 2 $mode 2>&1
  done
} > "$out/bench_cuda.txt"
note "bench: at $(elapsed)"
cat "$out/bench_cuda.txt" | tee -a "$summary"

# The block of docs/performance.md section 6 (days on 2 cores): each cell's
# step rate on this device and the projected time of a failing search step.
timeout 300 "$build/bin/induct" validate bench/block/lstm256_parity_outcome.yaml --time \
  --set run.device="$device" 2>&1 | sed -n '/^time:/,/all cells/p' > "$out/block_time.txt"
note "block --time: at $(elapsed)"
tee -a "$summary" < "$out/block_time.txt"

timeout 240 "$build/bin/induct" run configs/quickstart.yaml --set run.device="$device" \
  --out /tmp/induct-quickstart-gpu > "$out/quickstart.log" 2>&1
note "quickstart: rc $? at $(elapsed): $(grep -E 'finished in|error' "$out/quickstart.log" | tail -2)"
cp /tmp/induct-quickstart-gpu/trials.csv "$out/quickstart_trials.csv" 2>/dev/null
grep -A12 "^model" "$out/quickstart.log" | head -12 | tee -a "$summary"
