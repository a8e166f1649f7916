#!/usr/bin/env bash
# On a GPU machine: builds the executor for sm_90, runs the GPU test and the model-step example,
# and prints one JSON line with the overlapped, serialized and max-of-parts step times of a case
# where compute and communication take about as long (the example's all-reduces are repeated
# until they match the GEMMs), and overlapped / serialized. It also writes the measured-cost JSON
# of the example's generated one-rank step (the executor's timing mode; `sim::measured_cost_model`
# reads it) and names the file in the JSON line. Without a GPU it says so and exits 0.
#
# usage: bench/gpu/run.sh [BUILD_DIR]   (default build/gpu); OVERLAP_HIDDEN, OVERLAP_LAYERS and
#        OVERLAP_ITERATIONS pass on to the example; OVERLAP_MEASURED_COSTS sets the JSON's path
#        (default BUILD_DIR/measured_costs.json).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/gpu}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_CUDA_ARCHITECTURES=90 >&2
cmake --build "$build" --target cuda_gpu_test example_cuda_model_step >&2
test_bin=$build/tests/cuda/cuda_gpu_test
example=$build/examples/cuda/example_cuda_model_step
costs=${OVERLAP_MEASURED_COSTS:-$build/measured_costs.json}

set +e
test_out=$("$test_bin")
test_rc=$?
set -e
echo "$test_out" >&2
if [ $test_rc -eq 77 ]; then
  reason=$(echo "$test_out" | sed -n 's/^not run: //p' | sed 's/"/\\"/g')
  echo "{\"not_run\": \"$reason\"}"
  exit 0
fi
gpu_test=passed
[ $test_rc -eq 0 ] || gpu_test=failed

json_field() { sed -n "s/.*\"$1\": \([0-9.a-z]*\).*/\1/p" <<<"$2"; }
# Calibrate: one all-reduce per layer, then repeat the all-reduces so communication ~ compute.
rm -f "$costs"  # so a stale file is never reported as this run's
first=$(OVERLAP_COMM_REPEAT=1 OVERLAP_MEASURED_COSTS="$costs" "$example" | tee /dev/stderr | grep '^{')
compute=$(json_field compute_ms "$first")
comm=$(json_field comm_ms "$first")
repeat=$(awk -v a="$compute" -v c="$comm" 'BEGIN {r = int(a / c + 0.5); print (r < 1 ? 1 : r)}')
set +e
balanced=$(OVERLAP_COMM_REPEAT=$repeat "$example" | tee /dev/stderr | grep '^{')
example_rc=${PIPESTATUS[0]}
set -e
overlapped=$(json_field overlapped_ms "$balanced")
serialized=$(json_field serialized_ms "$balanced")
parts=$(json_field max_of_parts_ms "$balanced")
numerics=$(json_field numerics_ok "$balanced")
costs_json=null
[ -s "$costs" ] && costs_json="\"$costs\""
ratio=$(awk -v o="$overlapped" -v s="$serialized" 'BEGIN {printf "%.4f", o / s}')
echo "{\"gpu_test\": \"$gpu_test\", \"numerics_ok\": ${numerics:-false}, \"comm_repeat\": $repeat," \
     "\"compute_ms\": $(json_field compute_ms "$balanced"), \"comm_ms\": $(json_field comm_ms "$balanced")," \
     "\"overlapped_ms\": $overlapped, \"serialized_ms\": $serialized, \"max_of_parts_ms\": $parts," \
     "\"overlapped_over_serialized\": $ratio, \"overlapped_over_max_of_parts\": $(json_field overlapped_over_max_of_parts "$balanced")," \
     "\"measured_costs\": $costs_json}"
[ "$gpu_test" = passed ] && [ "$example_rc" -eq 0 ]
