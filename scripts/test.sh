#!/usr/bin/env bash
# The test command: installs what is missing, builds with every compiler present (g++, clang++;
# nvcc checks and overlap-profile ride on the g++ build when nvcc exists) and runs each build's
# ctest; then builds the benches in Release with g++ and runs them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
jobs=${JOBS:-$(nproc)}
# Warnings fail the build where OVERLAP_WERROR=ON (CI sets it); elsewhere they are printed.
werror=${OVERLAP_WERROR:-OFF}
status=0
echo "== format"
"$root/scripts/check-format.sh" || status=1
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || { echo "== $cxx: not installed, skipped"; continue; }
  build="$root/build/$cxx"
  nvcc=OFF
  [ "$cxx" = g++ ] && nvcc=ON
  echo "== $cxx: configure and build in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER="$cxx" \
        -DOVERLAP_NVCC_CHECKS=$nvcc -DOVERLAP_BUILD_PROFILE_TOOL=$nvcc -DOVERLAP_WERROR="$werror" >/dev/null
  cmake --build "$build" -j "$jobs"
  echo "== $cxx: ctest"
  ctest --test-dir "$build" -j "$jobs" --output-on-failure || status=1
done

# The benches as users build them: Release (-O3, NDEBUG). g++'s flow-based warnings (-Wrestrict,
# -Wstringop-overflow) depend on how much gets inlined, and NDEBUG turns a variable that only an
# assert reads into an unused-variable error; the Debug builds above see neither. g++ alone: it
# is the reference compiler, and clang's warnings come almost all from its front end, which its
# Debug build already ran. Only the bench targets and the overlap-plan tool (installed, so built
# as users build it, and what bench.published runs): the tests ran above.
release="$root/build/g++-release"
echo "== g++ Release: configure and build the benches and overlap-plan in $release"
cmake -S "$root" -B "$release" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
      -DOVERLAP_NVCC_CHECKS=OFF -DOVERLAP_BUILD_EXAMPLES=OFF -DOVERLAP_WERROR="$werror" >/dev/null
cmake --build "$release" -j "$jobs" --target bench_schedule_quality bench_sim_speed bench_fidelity bench_concurrency overlap-plan
echo "== g++ Release: benches (each prints one JSON object)"
ctest --test-dir "$release" -R '^bench\.(schedule_quality|sim_speed|fidelity|concurrency|published)$' -V || status=1
exit $status
