#!/usr/bin/env bash
# The test command: installs what is missing, builds with every compiler present (g++, clang++;
# nvcc checks ride on the g++ build when nvcc exists) and runs each build's ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
jobs=${JOBS:-$(nproc)}
status=0
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || { echo "== $cxx: not installed, skipped"; continue; }
  build="$root/build/$cxx"
  nvcc=OFF
  [ "$cxx" = g++ ] && nvcc=ON
  echo "== $cxx: configure and build in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER="$cxx" \
        -DOVERLAP_NVCC_CHECKS=$nvcc >/dev/null
  cmake --build "$build" -j "$jobs"
  echo "== $cxx: ctest"
  ctest --test-dir "$build" -j "$jobs" --output-on-failure || status=1
done
exit $status
