#!/usr/bin/env bash
# On a GPU machine, in one go: builds overlap-profile, the GPU test and the model-step example for
# sm_90 (Release); runs the GPU test; measures this GPU's profile (overlap-profile, ~30 s); closes
# the loop (overlap-profile --check-step: a generated one-GPU step with kernels of its own sizes
# and its communication as copy kernels, overlapped and serialized, next to the simulator's
# prediction for the same programs from the profile just measured); and runs the example (its
# generated step's numbers, eager and as a CUDA graph, and its measured-cost JSON). Prints one
# JSON line at the end. Without a GPU it says so and exits 0.
#
# usage: bench/gpu/run.sh [BUILD_DIR]   (default build/gpu); CUDA_DEVICE_MAX_CONNECTIONS, if set,
#        goes to the check and its prediction; the profile is written to BUILD_DIR/profile.json,
#        the measured costs to BUILD_DIR/measured_costs.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/gpu}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DOVERLAP_NVCC_CHECKS=OFF >&2
cmake --build "$build" --target overlap-profile cuda_gpu_test example_cuda_model_step >&2
profile_tool=$build/tools/overlap_profile/overlap-profile
profile=$build/profile.json
costs=$build/measured_costs.json

set +e
test_out=$("$build/tests/cuda/cuda_gpu_test")
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

rm -f "$profile" "$costs"  # so a stale file is never reported as this run's
set +e
"$profile_tool" --out "$profile" >&2
profile_rc=$?
check_out=$("$profile_tool" --check-step "$profile")
check_rc=$?
example_out=$(OVERLAP_MEASURED_COSTS="$costs" "$build/examples/cuda/example_cuda_model_step")
example_rc=$?
set -e
echo "$check_out" >&2
echo "$example_out" >&2
check=$(grep '^{' <<<"$check_out" | tail -n 1 || true)
example=$(grep '^{' <<<"$example_out" | tail -n 1 || true)
[ -n "$check" ] || check=null
[ -n "$example" ] || example=null
echo "{\"gpu_test\": \"$gpu_test\", \"profile\": \"$profile\", \"profile_rc\": $profile_rc," \
     "\"check_step\": $check, \"check_rc\": $check_rc, \"example\": $example, \"example_rc\": $example_rc}"
[ "$gpu_test" = passed ] && [ $profile_rc -eq 0 ] && [ $check_rc -eq 0 ] && [ $example_rc -eq 0 ]
