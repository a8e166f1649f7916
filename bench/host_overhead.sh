#!/usr/bin/env bash
# Host overhead of the CUDA/NCCL executor: callgrind counts the instructions of
# basic_executor<null_api>::run() dispatching a generated TP x DP program (about 4,000 ops), and of
# the same calls written out by hand (generated straight-line code), both on a null backend whose
# calls do nothing out of line. Only the measured functions are collected (--toggle-collect).
# Prints {"dsl_instructions_per_op":…, "handwritten_instructions_per_op":…, "ratio":…,
# "graph_replay_instructions_per_op":…}: ratio is eager dispatch over hand-written; the last is
# the host cost per op of replaying the step captured as a CUDA graph (one launch per step).
#
# usage: bench/host_overhead.sh [BUILD_DIR]   (default build/host_overhead, configured and built
#        when its binaries are missing); STEPS=n sets the steps measured (default 20).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/host_overhead}
steps=${STEPS:-20}
bin=$build/bench/host_overhead
if [ ! -x "$bin/bench_host_overhead_dsl" ] || [ ! -x "$bin/bench_host_overhead_handwritten" ]; then
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  cmake --build "$build" --target bench_host_overhead_dsl bench_host_overhead_handwritten >&2
fi
if ! command -v valgrind >/dev/null; then
  echo "host_overhead: valgrind is required (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions collected inside function $2 of binary $1 (more arguments: $3...), divided by the
# ops of the program times the steps.
per_op() {
  valgrind --tool=callgrind --toggle-collect="$2" --callgrind-out-file="$tmp/$2.out" \
    "$1" "$steps" "${@:3}" >"$tmp/$2.json" 2>"$tmp/$2.log" || { cat "$tmp/$2.log" >&2; exit 1; }
  local total ops ran
  total=$(awk '/^(summary|totals):/ {print $2; exit}' "$tmp/$2.out")
  ops=$(sed -n 's/.*"ops":\([0-9]*\).*/\1/p' "$tmp/$2.json")
  ran=$(sed -n 's/.*"steps":\([0-9]*\).*/\1/p' "$tmp/$2.json")
  if [ -z "$total" ] || [ -z "$ops" ] || [ "$ops" -eq 0 ] || [ "$ran" != "$steps" ]; then
    echo "host_overhead: no count from $1 (total '$total', ops '$ops', steps '$ran')" >&2
    exit 1
  fi
  awk -v t="$total" -v o="$ops" -v s="$steps" 'BEGIN {printf "%.2f", t / (o * s)}'
}

dsl=$(per_op "$bin/bench_host_overhead_dsl" measure_dispatch)
hand=$(per_op "$bin/bench_host_overhead_handwritten" measure_handwritten)
replay=$(per_op "$bin/bench_host_overhead_dsl" measure_replay replay)
ratio=$(awk -v d="$dsl" -v h="$hand" 'BEGIN {printf "%.3f", d / h}')
echo "{\"dsl_instructions_per_op\": $dsl, \"handwritten_instructions_per_op\": $hand, \"ratio\": $ratio, \"graph_replay_instructions_per_op\": $replay}"
