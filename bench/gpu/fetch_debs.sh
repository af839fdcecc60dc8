#!/usr/bin/env bash
# Fetches the Debian 12 packages that building induct needs besides LibTorch, CMake and a
# compiler (yaml-cpp, Boost headers + program_options + test, SQLite, oneDNN; about 20 MB)
# into .gpu-debs/ at the repository root (ignored by git), for a machine that cannot install
# them: bench/gpu/check.sh unpacks them into a private prefix there. Safe to rerun.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-debs
cd .gpu-debs
packages=(
  libyaml-cpp-dev libyaml-cpp0.7
  libboost1.74-dev libboost-program-options1.74-dev libboost-program-options1.74.0
  libboost-test1.74-dev libboost-test1.74.0
  libsqlite3-dev libsqlite3-0
  libdnnl-dev libdnnl2
)
# apt-get download writes as _apt where it can; a folder it cannot write only warns.
apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
for p in "${packages[@]}"; do
  ls "${p}"_*.deb > /dev/null 2>&1 || { echo "fetch_debs: ${p} was not downloaded" >&2; exit 1; }
done
du -sh . | sed 's/^/fetch_debs: .gpu-debs holds /'
