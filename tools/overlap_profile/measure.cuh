#pragma once
// What overlap-profile measures on the GPU it runs on, each as a part of a `sim::profile`:
// dense GEMMs on a grid, routed experts' grouped GEMMs, a device copy, the host's launch and
// event costs, the sustained tensor rate with the SM clock under it, and the two-stream probe of
// a GEMM beside a communication-like copy kernel. Every kernel time is the median of `reps`
// CUDA-event-timed runs after two warm-ups, each run timed on its own (as the H200 reference
// was: data/measured-h200/), on random bf16 data.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <overlap/sim/machine/profile.hpp>

#include "gemms.hpp"
#include "kernels.cuh"

namespace overlap_profile {

/// Device memory that frees itself.
struct device_buffer {
  void* data = nullptr;
  std::size_t bytes = 0;
  explicit device_buffer(std::size_t n) : bytes(n) { cuda_ok(cudaMalloc(&data, n), "cudaMalloc"); }
  ~device_buffer() { cudaFree(data); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

class timer {
 public:
  explicit timer(cudaStream_t s) : stream_(s) {
    cuda_ok(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_ok(cudaEventCreate(&end_), "cudaEventCreate");
  }
  ~timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(end_);
  }
  timer(const timer&) = delete;
  timer& operator=(const timer&) = delete;

  /// `work` once on the stream between two events: microseconds.
  double once(const std::function<void()>& work) {
    cuda_ok(cudaEventRecord(start_, stream_), "cudaEventRecord");
    work();
    cuda_ok(cudaEventRecord(end_, stream_), "cudaEventRecord");
    cuda_ok(cudaEventSynchronize(end_), "cudaEventSynchronize");
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, start_, end_), "cudaEventElapsedTime");
    return 1000.0 * ms;
  }
  /// The median of `reps` timed runs after two warm-ups.
  double median(const std::function<void()>& work, int reps = 5) {
    work();
    work();
    std::vector<double> us;
    for (int i = 0; i < reps; ++i) us.push_back(once(work));
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_{}, end_{};
};

struct grid {
  std::vector<std::int64_t> m, n, k;
};
/// The H200 reference's grid (data/measured-h200/gemm_sweep.jsonl), or a small one (--quick).
inline grid gemm_grid(bool quick) {
  if (quick) return {{512, 4096}, {1024, 8192}, {1024, 4096}};
  return {{256, 512, 1024, 2048, 4096, 8192, 16384},
          {512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 14336, 28672},
          {512, 1024, 2048, 4096, 8192}};
}

/// The dense GEMM table on `g`, from buffers large enough for its largest shape.
inline overlap::sim::gemm_table measure_gemms(gemms& blas, timer& t, cudaStream_t s, const grid& g) {
  const std::int64_t m = g.m.back(), n = g.n.back(), k = g.k.back();
  device_buffer x(static_cast<std::size_t>(m * k * 2)), w(static_cast<std::size_t>(n * k * 2)),
      y(static_cast<std::size_t>(m * n * 2));
  fill(x.data, static_cast<std::size_t>(m * k), 1, s);
  fill(w.data, static_cast<std::size_t>(n * k), 2, s);
  overlap::sim::gemm_table table{g.m, g.n, g.k, {}};
  for (const std::int64_t mm : g.m)
    for (const std::int64_t nn : g.n)
      for (const std::int64_t kk : g.k)
        table.us.push_back(t.median([&] { blas.dense(mm, nn, kk, x.data, w.data, y.data, s); }));
  return table;
}

/// Grouped GEMMs at routed-expert shapes (hidden, expert FFN, experts, top-k over 4,096 tokens,
/// evenly routed) for expert parallelism 1 to 64, fc1 (hidden -> 2 ffn) and fc2 (ffn -> hidden),
/// as the H200 reference measured them. A shape whose memory the GPU lacks is left out.
inline std::vector<overlap::sim::grouped_gemm_entry> measure_grouped(gemms& blas, timer& t, cudaStream_t s,
                                                                     bool quick) {
  struct model {
    std::int64_t hidden, ffn, experts, topk;
  };
  const std::vector<model> models =
      quick ? std::vector<model>{{2880, 2880, 128, 4}}
            : std::vector<model>{{7168, 2048, 256, 8}, {2880, 2880, 128, 4}, {2048, 768, 128, 8}};
  std::vector<overlap::sim::grouped_gemm_entry> out;
  for (const model& mo : models)
    for (std::int64_t ep = 1; ep <= (quick ? 2 : 64); ep *= 2) {
      const std::int64_t groups = mo.experts / ep, tokens = 4096 * mo.topk / mo.experts * ep;
      for (const auto& [n, k] : {std::pair{2 * mo.ffn, mo.hidden}, std::pair{mo.hidden, mo.ffn}}) {
        const auto bytes = [](std::int64_t v) { return static_cast<std::size_t>(v * 2); };
        std::size_t free = 0, total = 0;
        cuda_ok(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
        const std::size_t need = bytes(groups * (tokens * k + n * k + tokens * n));
        if (need + (std::size_t{1} << 30) > free) {
          std::fprintf(stderr, "overlap-profile: grouped %lld x (%lld x %lld x %lld) left out: %zu MiB needed\n",
                       static_cast<long long>(groups), static_cast<long long>(tokens), static_cast<long long>(n),
                       static_cast<long long>(k), need >> 20);
          continue;
        }
        device_buffer x(bytes(groups * tokens * k)), w(bytes(groups * n * k)), y(bytes(groups * tokens * n));
        fill(x.data, static_cast<std::size_t>(groups * tokens * k), 3, s);
        fill(w.data, static_cast<std::size_t>(groups * n * k), 4, s);
        const double us = t.median([&] { blas.grouped(groups, tokens, n, k, x.data, w.data, y.data, s); });
        out.push_back({groups, tokens, n, k, us});
      }
    }
  return out;
}

/// A device-to-device copy of 2 GiB: bytes read plus written per microsecond.
inline double measure_memory(timer& t, cudaStream_t s) {
  const std::size_t bytes = std::size_t{2} << 30;
  device_buffer from(bytes), to(bytes);
  const double us = t.median(
      [&] { cuda_ok(cudaMemcpyAsync(to.data, from.data, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync"); });
  return 2.0 * static_cast<double>(bytes) / us;
}

/// The host's cost of one kernel launch and of one event record (timing off), each the mean
/// over 20,000 calls on an idle stream.
inline std::pair<double, double> measure_host(cudaStream_t s) {
  using clock = std::chrono::steady_clock;
  constexpr int calls = 20000;
  empty_kernel<<<1, 1, 0, s>>>();
  cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  auto start = clock::now();
  for (int i = 0; i < calls; ++i) empty_kernel<<<1, 1, 0, s>>>();
  const double launch = std::chrono::duration<double, std::micro>(clock::now() - start).count() / calls;
  cuda_ok(cudaGetLastError(), "empty kernel launch");
  cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  cudaEvent_t e{};
  cuda_ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  start = clock::now();
  for (int i = 0; i < calls; ++i) cuda_ok(cudaEventRecord(e, s), "cudaEventRecord");
  const double record = std::chrono::duration<double, std::micro>(clock::now() - start).count() / calls;
  cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  cudaEventDestroy(e);
  return {launch, record};
}

/// The SM clock now, from a kernel that spins 10^7 clocks: MHz.
inline double measure_clock(cudaStream_t s) {
  device_buffer out(2 * sizeof(unsigned long long));
  clock_probe<<<1, 1, 0, s>>>(10'000'000, static_cast<unsigned long long*>(out.data));
  cuda_ok(cudaGetLastError(), "clock probe launch");
  unsigned long long host[2] = {0, 0};
  cuda_ok(cudaMemcpyAsync(host, out.data, sizeof host, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return host[1] > 0 ? 1000.0 * static_cast<double>(host[0]) / static_cast<double>(host[1]) : 0;
}

/// `seconds` of back-to-back 8192^3 GEMMs in windows of 16: the median rate of the windows after
/// the first second (the climb to the power limit), in flops per microsecond, and the SM clock
/// right after them.
inline std::pair<double, double> measure_sustained(gemms& blas, timer& t, cudaStream_t s, double seconds) {
  constexpr std::int64_t size = 8192;
  const auto bytes = static_cast<std::size_t>(size * size * 2);
  device_buffer a(bytes), b(bytes), c(bytes);
  fill(a.data, static_cast<std::size_t>(size * size), 5, s);
  fill(b.data, static_cast<std::size_t>(size * size), 6, s);
  const double window_flops = 16 * 2.0 * size * size * size;
  std::vector<double> rates;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > seconds) break;
    const double us = t.once([&] {
      for (int i = 0; i < 16; ++i) blas.dense(size, size, size, a.data, b.data, c.data, s);
    });
    if (elapsed > 1.0) rates.push_back(window_flops / us);
  }
  const double clock = measure_clock(s);
  if (rates.empty()) return {0, clock};
  std::sort(rates.begin(), rates.end());
  return {rates[rates.size() / 2], clock};
}

/// What the copy's per-CTA stamps say of one run: its own time (first CTA start to last CTA end,
/// microseconds) and on how many SMs its CTAs ran.
struct copy_run {
  double us = 0;
  int sms = 0;
};
inline copy_run read_stamps(const cta_stamp* device_stamps, int ctas) {
  std::vector<cta_stamp> stamps(static_cast<std::size_t>(ctas));
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  cuda_ok(cudaMemcpy(stamps.data(), device_stamps, stamps.size() * sizeof(cta_stamp), cudaMemcpyDeviceToHost),
          "cudaMemcpy");
  unsigned long long first = ~0ull, last = 0;
  std::vector<unsigned> sms;
  for (const cta_stamp& s : stamps) {
    first = std::min(first, s.start);
    last = std::max(last, s.end);
    if (std::find(sms.begin(), sms.end(), s.sm) == sms.end()) sms.push_back(s.sm);
  }
  return {last > first ? static_cast<double>(last - first) / 1000.0 : 0.0, static_cast<int>(sms.size())};
}

/// A cuBLAS 8192^3 GEMM on one stream beside a 16-CTA copy of 512 MiB on another, the copy
/// issued first: each alone and both together, and how many of the copy's CTAs fit one SM. Then,
/// from the copy's own per-CTA stamps (medians of 5 runs after 2 warm-ups): its time beside the
/// GEMM, and its time when issued during the GEMM, where with more than one hardware queue it is
/// placed on the first SMs the GEMM's tail frees, packed (`copy_packed_us`; left 0, not measured,
/// when it did not run packed: CUDA_DEVICE_MAX_CONNECTIONS=1 queues it behind the GEMM).
inline overlap::sim::concurrency_probe measure_concurrency(gemms& blas, cudaStream_t gemm_stream) {
  constexpr std::int64_t size = 8192;
  constexpr int ctas = 16;
  const std::size_t copy_bytes = std::size_t{512} << 20;
  const auto bytes = static_cast<std::size_t>(size * size * 2);
  device_buffer a(bytes), b(bytes), c(bytes), from(copy_bytes), to(copy_bytes);
  fill(a.data, static_cast<std::size_t>(size * size), 7, gemm_stream);
  fill(b.data, static_cast<std::size_t>(size * size), 8, gemm_stream);
  cudaStream_t copy_stream{};
  cuda_ok(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaEvent_t fork{}, join{};
  cuda_ok(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cuda_ok(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  timer t(gemm_stream);
  const auto gemm = [&] { blas.dense(size, size, size, a.data, b.data, c.data, gemm_stream); };
  const auto copy_alone = [&] { copy(from.data, to.data, copy_bytes, ctas, gemm_stream); };
  const auto side_by_side = [&] {
    cuda_ok(cudaEventRecord(fork, gemm_stream), "cudaEventRecord");
    cuda_ok(cudaStreamWaitEvent(copy_stream, fork), "cudaStreamWaitEvent");
    copy(from.data, to.data, copy_bytes, ctas, copy_stream);
    gemm();
    cuda_ok(cudaEventRecord(join, copy_stream), "cudaEventRecord");
    cuda_ok(cudaStreamWaitEvent(gemm_stream, join), "cudaStreamWaitEvent");
  };
  overlap::sim::concurrency_probe probe;
  probe.copy_ctas = ctas;
  cuda_ok(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&probe.copy_ctas_per_sm, copy_kernel, copy_threads, 0),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  probe.gemm_alone_us = t.median(gemm);
  probe.copy_alone_us = t.median(copy_alone);
  probe.side_by_side_us = t.median(side_by_side);
  // The copy's own time, from its stamps: beside the GEMM (issued first), and issued during it.
  device_buffer stamp_buffer(sizeof(cta_stamp) * static_cast<std::size_t>(ctas));
  auto* stamps = static_cast<cta_stamp*>(stamp_buffer.data);
  const auto own_time = [&](bool copy_first) {
    std::vector<copy_run> runs;
    for (int rep = 0; rep < 7; ++rep) {
      cuda_ok(cudaEventRecord(fork, gemm_stream), "cudaEventRecord");
      cuda_ok(cudaStreamWaitEvent(copy_stream, fork), "cudaStreamWaitEvent");
      if (!copy_first) gemm();
      copy(from.data, to.data, copy_bytes, ctas, copy_stream, stamps);
      if (copy_first) gemm();
      cuda_ok(cudaEventRecord(join, copy_stream), "cudaEventRecord");
      cuda_ok(cudaStreamWaitEvent(gemm_stream, join), "cudaStreamWaitEvent");
      if (rep >= 2)
        runs.push_back(read_stamps(stamps, ctas));
      else
        cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    std::sort(runs.begin(), runs.end(), [](const copy_run& a, const copy_run& b) { return a.us < b.us; });
    return runs[runs.size() / 2];
  };
  probe.copy_beside_gemm_us = own_time(true).us;
  if (const copy_run packed = own_time(false); packed.sms < ctas) probe.copy_packed_us = packed.us;
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(copy_stream);
  return probe;
}

}  // namespace overlap_profile
