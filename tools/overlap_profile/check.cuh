#pragma once
// overlap-profile --check-step: step_check.hpp's programs on this GPU, timed, next to the
// simulator's prediction from a profile. Prints one JSON object.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <overlap/cuda.hpp>
#include <overlap/sim/machine/machine.hpp>
#include <overlap/sim/machine/profile_json.hpp>

#include "gemms.hpp"
#include "kernels.cuh"
#include "measure.cuh"
#include "step_check.hpp"

namespace overlap_profile {

/// The median host time of `iterations` steps of `exec` (each run and waited for), ms.
inline double step_ms(overlap::cuda::executor& exec, int iterations) {
  exec.run();  // warm-up: cuBLASLt's plans, the first launches
  exec.wait();
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    exec.run();
    exec.wait();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

inline int check_step_on_gpu(const std::string& profile_path, int iterations) {
  const auto measured = std::make_shared<const overlap::sim::profile>(overlap::sim::read_profile(profile_path));
  const overlap::sim::machine m = overlap::sim::with_profile(overlap::sim::h100_node(), measured);
  const one_gpu_step s = check_step();
  const char* env = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const int connections = env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 8;  // CUDA's default: 8
  const double predicted_overlapped = predicted_us(m, s, s.overlapped, connections) / 1000;
  const double predicted_serialized = predicted_us(m, s, s.serialized, connections) / 1000;

  // Operands for the largest problem, and copy buffers for the largest transfer or module copy.
  std::int64_t x = 0, w = 0, y = 0, copy = 16;
  for (const sc::op& o : s.overlapped.ops) {
    if (sc::is_communication(o.kind)) copy = std::max(copy, moved_bytes(s, o));
    if (o.kind != sc::op_kind::compute) continue;
    const kernel_plan k = plan_of(o);
    copy = std::max(copy, k.copy_bytes / 2);
    for (const sc::gemm_shape& g : k.problems) {
      x = std::max(x, g.groups * g.m * g.k);
      w = std::max(w, g.groups * g.n * g.k);
      y = std::max(y, g.groups * g.m * g.n);
    }
  }
  const auto bf16 = [](std::int64_t v) { return static_cast<std::size_t>(v) * 2; };
  device_buffer xs(bf16(x)), ws(bf16(w)), ys(bf16(y)), from(static_cast<std::size_t>(copy)),
      to(static_cast<std::size_t>(copy));
  fill(xs.data, static_cast<std::size_t>(x), 11);
  fill(ws.data, static_cast<std::size_t>(w), 12);
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  int per_sm = 0;
  cuda_ok(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, copy_kernel, copy_threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const int whole_gpu = measured->sms * std::max(1, per_sm);
  const auto round16 = [](std::int64_t bytes) { return static_cast<std::size_t>(bytes / 16 * 16); };
  gemms blas;
  const auto compute = [&](const sc::op& o, cudaStream_t stream) {
    const kernel_plan k = plan_of(o);
    for (const sc::gemm_shape& g : k.problems) {
      if (g.groups == 1)
        blas.dense(g.m, g.n, g.k, xs.data, ws.data, ys.data, stream);
      else
        blas.grouped(g.groups, g.m, g.n, g.k, xs.data, ws.data, ys.data, stream);
    }
    if (k.copy_bytes >= 32) overlap_profile::copy(from.data, to.data, round16(k.copy_bytes / 2), whole_gpu, stream);
  };
  const auto communicate = [&](const sc::op&, std::int64_t bytes, int ctas, cudaStream_t stream) {
    if (bytes >= 16) overlap_profile::copy(from.data, to.data, round16(bytes), ctas, stream);
  };
  double overlapped = 0, serialized = 0;
  {
    overlap::cuda::executor exec(
        s.overlapped, check_resources<overlap::cuda::cuda_api>(s, s.overlapped, compute, communicate, m.comm_sms));
    overlapped = step_ms(exec, iterations);
  }
  {
    overlap::cuda::executor exec(
        s.serialized, check_resources<overlap::cuda::cuda_api>(s, s.serialized, compute, communicate, m.comm_sms));
    serialized = step_ms(exec, iterations);
  }
  std::printf(
      "{\"profile\": \"%s\", \"connections\": %d, \"ops\": %zu, \"overlapped_ms\": %.4f, "
      "\"serialized_ms\": %.4f, \"overlapped_over_serialized\": %.4f, \"predicted_overlapped_ms\": %.4f, "
      "\"predicted_serialized_ms\": %.4f, \"predicted_over_measured_overlapped\": %.4f, "
      "\"predicted_over_measured_serialized\": %.4f}\n",
      profile_path.c_str(), connections, s.overlapped.ops.size(), overlapped, serialized, overlapped / serialized,
      predicted_overlapped, predicted_serialized, predicted_overlapped / overlapped, predicted_serialized / serialized);
  return 0;
}

}  // namespace overlap_profile
