#!/usr/bin/env bash
# Fails when a C++ source of the repository differs from its .clang-format layout (CI runs it;
# `scripts/check_format.sh --fix` rewrites the files in place).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run --Werror "${files[@]}"
echo "check_format: ${#files[@]} files match .clang-format"
