#!/usr/bin/env bash
# Installs the Debian 12 packages induct needs (only those missing), then configures and
# builds it in ./build. Safe to rerun. Run as root, or as a user with sudo. Arguments are
# passed to CMake (CI: -DINDUCT_WARNINGS_AS_ERRORS=ON).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake ninja-build pkg-config
  libtorch-dev          # LibTorch 1.13 (CPU)
  libopenblas0-pthread  # without it libtorch falls back to the reference BLAS (~50x slower)
  libdnnl-dev           # oneDNN's sgemm for the SDK's linear layers and LSTM (libtorch already uses libdnnl2)
  libboost-dev libboost-program-options-dev libboost-test-dev
  libyaml-cpp-dev
  libsqlite3-dev sqlite3
  python3-torch         # Debian's PyTorch 1.13: the reference models of bench/reference (tests, benchmarks)
  python3-pandas        # the Python package's DataFrames (python/, test_python)
  gnuplot-nox           # figures of `induct report`
  openmpi-bin libopenmpi-dev libboost-mpi-dev  # the MPI runner (mpirun / srun induct run)
  clang-format          # the source layout (.clang-format) that CI checks
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j "$(nproc)"
