#!/usr/bin/env bash
# The main job: builds the examples, prints their resolved settings, environment and notes,
# simulates each overlap family they enable with and without overlap (step time, exposed
# communication) and writes the timelines to out/timelines/, then shows the diagnostics of every
# file in examples/errors/ (their failing to compile is the point).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh" || exit 1
build="$root/build/demo"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOVERLAP_BUILD_TESTS=OFF >/dev/null || exit 1
cmake --build "$build" || exit 1
timelines="$root/out/timelines"
mkdir -p "$timelines"
for exe in "$build"/examples/example_*; do
  echo
  echo "#### ${exe##*/}"
  "$exe" "$timelines" || exit 1
done
for src in "$root"/examples/errors/*.cpp; do
  echo
  echo "#### examples/errors/${src##*/} (expected to fail: $(grep -o '^// EXPECT: .*' "$src" | cut -c12- | tr '\n' ' '))"
  # The compiler's error lines as g++ prints them (the full output also has the instantiation
  # context and the rule's row in table.inc).
  g++ -std=c++20 -I"$root/include" -fsyntax-only "$src" 2>&1 | grep -E ": error: " || true
done
