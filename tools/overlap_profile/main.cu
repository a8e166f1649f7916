// overlap-profile: measures the machine profile of the GPU it runs on (sim/machine/profile.hpp) and
// writes it as JSON, for `overlap-plan --profile` and `sim::read_profile`. See --help.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include <overlap/sim/machine/profile_json.hpp>

#include "check.cuh"
#include "measure.cuh"

namespace {

constexpr const char* help_text = R"(overlap-profile: measures the GPU it runs on for the overlap simulator.

usage: overlap-profile [--out FILE] [--quick]
       overlap-profile --check-step PROFILE [--iterations N]

On device 0, in about half a minute (three at most): bf16 GEMMs y = x w^T on a grid of m 256-16384,
n 512-28672, k 512-8192 (cuBLASLt, its heuristic's first algorithm, fp32 accumulation); routed
experts' grouped GEMMs at DeepSeek-V3, GPT-OSS-120B and Qwen3-30B-A3B shapes for EP 1-64 (one
strided batched cuBLAS GEMM: even routing gives every expert the same size); a 2 GiB device copy;
the host's cost of a kernel launch and of an event record; 10 s of back-to-back 8192^3 GEMMs for
the sustained rate at the power limit and the SM clock under it; and a 16-CTA copy kernel beside
an 8192^3 GEMM on two streams. Each kernel time is the median of five CUDA-event-timed runs after
two warm-ups, on random data. Attention is not measured (the simulator keeps its analytic
attention for a profile without an attention table).

  --out FILE   write the profile there (default: standard output)
  --quick      a small grid, one model's experts and 2 s of sustained load: a smoke test
  -h, --help   this text

--check-step PROFILE closes the loop: a generated training step (rank 0 of a data-parallel
pair of a 4-layer hidden-4096 model) runs on this GPU with kernels of its own sizes, its
communication as copy kernels of the bytes it moves on its SMs, overlapped and serialized (the
median of N steps each, default 5), and prints both next to the simulator's prediction for the
same programs from PROFILE, as one JSON object. CUDA_DEVICE_MAX_CONNECTIONS, if set, goes to both.

exit status: 0 written (or checked), 1 a measurement failed, 2 bad arguments, 77 not run: no GPU.
)";

int run(const std::string& out, bool quick) {
  using overlap_profile::cuda_ok;
  const auto started = std::chrono::steady_clock::now();
  cuda_ok(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp props{};
  cuda_ok(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
  cudaStream_t s{};
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  overlap::sim::profile p;
  p.gpu = props.name;
  p.sms = props.multiProcessorCount;
  {
    overlap_profile::gemms blas;
    overlap_profile::timer t(s);
    const auto say = [&](const char* what) {
      const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::fprintf(stderr, "overlap-profile: %5.1f s  %s\n", at, what);
    };
    say("sustained load (and warming the GPU for what follows)");
    const auto [rate, clock] = overlap_profile::measure_sustained(blas, t, s, quick ? 2.0 : 10.0);
    p.sustained_flops_per_us = rate;
    p.sustained_clock_mhz = clock;
    say("dense GEMMs");
    p.gemm = overlap_profile::measure_gemms(blas, t, s, overlap_profile::gemm_grid(quick));
    say("grouped GEMMs");
    p.grouped_gemm = overlap_profile::measure_grouped(blas, t, s, quick);
    say("device copy");
    p.memory_bytes_per_us = overlap_profile::measure_memory(t, s);
    say("host costs");
    const auto [launch, record] = overlap_profile::measure_host(s);
    p.launch_us = launch;
    p.event_record_us = record;
    say("two streams");
    p.concurrency = overlap_profile::measure_concurrency(blas, s);
    say("done");
  }
  cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
  p.source = "overlap-profile on device 0 (" + std::string(props.name) + ", " +
             std::to_string(props.multiProcessorCount) + " SMs, compute capability " + std::to_string(props.major) +
             "." + std::to_string(props.minor) + "), CUDA runtime " + std::to_string(CUDART_VERSION) +
             (quick ? ", --quick" : "");
  const std::string text = overlap::sim::to_json(p).dump(1) + "\n";
  if (out.empty()) {
    std::cout << text;
  } else {
    std::ofstream file(out);
    if (!(file << text)) {
      std::fprintf(stderr, "overlap-profile: cannot write %s\n", out.c_str());
      return 1;
    }
    std::fprintf(stderr, "overlap-profile: wrote %s\n", out.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, check;
  bool quick = false;
  int iterations = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "-h" || a == "--help") {
      std::cout << help_text;
      return 0;
    }
    const char* v = nullptr;
    if (a == "--quick") {
      quick = true;
    } else if ((a == "--out" || a == "--check-step" || a == "--iterations") && (v = value()) != nullptr) {
      if (a == "--out") out = v;
      if (a == "--check-step") check = v;
      if (a == "--iterations") iterations = std::atoi(v);
    } else {
      std::fprintf(stderr, "overlap-profile: %s: unknown argument, or no value (overlap-profile --help)\n", a.c_str());
      return 2;
    }
  }
  if (iterations < 1 || iterations > 1000) {
    std::fprintf(stderr, "overlap-profile: --iterations needs 1..1000\n");
    return 2;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("not run: no GPU (%s: %s)\n", cudaGetErrorName(e),
                e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device is visible");
    return 77;
  }
  try {
    return check.empty() ? run(out, quick) : overlap_profile::check_step_on_gpu(check, iterations);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "overlap-profile: FAILED: %s\n", ex.what());
    return 1;
  }
}
