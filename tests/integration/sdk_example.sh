#!/usr/bin/env bash
# The SDK promise, end to end: install induct into a temporary prefix, build
# examples/elman-plugin against that install only, and run a study with the installed `induct`
# using the plugin through --plugin-path. No rebuild of the core is involved.
#   sdk_example.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d /tmp/induct-sdk-example.XXXXXX)
trap 'rm -rf "$work"' EXIT
step() {
  local log=$1; shift
  if ! "$@" > "$work/$log" 2>&1; then
    echo "FAILED: $*"; cat "$work/$log"; exit 1
  fi
}
step install.log cmake --install "$build_dir" --prefix "$work/prefix"
step configure.log cmake -S "$source_dir/examples/elman-plugin" -B "$work/elman" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix"
step build.log cmake --build "$work/elman"
induct="$work/prefix/bin/induct"
"$induct" plugins --plugin-path "$work/elman" | tee "$work/plugins.txt"
grep -Eq "^model +elman +elman 1.0.0 +libinduct_elman.so" "$work/plugins.txt"
# The plugin works in a process that is not the host that built it: a bare load checks its
# RUNPATH and links (BUILD-NOTES.md).
"$induct" run "$source_dir/examples/elman-plugin/study.yaml" --plugin-path "$work/elman" --out "$work/run"
grep -q "succeeded" "$work/run/train.csv"
# A format plugin the same way (examples/format-plugin): listed, and a study trains with it.
step configure-format.log cmake -S "$source_dir/examples/format-plugin" -B "$work/format" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix"
step build-format.log cmake --build "$work/format"
"$induct" plugins --plugin-path "$work/format" | tee "$work/formats.txt"
grep -Eq "^format +sparse_acot +sparse_acot 1.0.0 +libinduct_sparse_acot.so" "$work/formats.txt"
"$induct" run "$source_dir/examples/format-plugin/study.yaml" --plugin-path "$work/format" \
  --out "$work/format-run" 2>&1 | tee "$work/format-run.txt"
grep -q "lstm(hidden=32,layers=1) sparse_acot(every=3) uniform L=8" "$work/format-run.txt"
grep -q "succeeded" "$work/format-run/train.csv"
echo "sdk example: installed, built out of tree, loaded and trained (a model and a format plugin)"
