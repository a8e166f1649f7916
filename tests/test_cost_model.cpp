// The analytic cost model's GEMMs (sim/cost_model.hpp): square GEMMs at the measured H100 sweep's
// throughput, and split-K for a small m x n with a long k (TP ring-exchange chunks).
#include <doctest/doctest.h>

#include <cstdint>

#include <overlap/sim/cost_model.hpp>
#include <overlap/sim/machine.hpp>

namespace sc = overlap::schedule;

namespace {
sc::op gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  sc::op o;
  o.kind = sc::op_kind::compute;
  o.key.type = sc::op_type::fc1_fprop;
  o.gemm = {m, n, k};
  o.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return o;
}
}  // namespace

TEST_CASE("square GEMMs run at about the measured H100 cuBLAS throughput") {
  const overlap::sim::cost_model h100(overlap::sim::h100_node());
  // bf16 TFLOP/s measured by zzc0721/torch-performance-test-data issue #79 (cited in machine.hpp).
  const struct {
    std::int64_t size;
    double measured;
  } sweep[] = {{1024, 177}, {2048, 677}, {4096, 789}};
  for (const auto& point : sweep) {  // not a structured binding: clang 14 cannot capture one
    const std::int64_t size = point.size;
    const sc::op o = gemm(size, size, size);
    const double tflops = o.flops / h100.compute_us(o, 132) / 1e6;
    CAPTURE(size);
    CHECK(tflops == doctest::Approx(point.measured).epsilon(0.15));
    CHECK(h100.waves_of(o, 132).split == 1);  // the tiles fill the GPU, or k is short
  }
}

TEST_CASE("a small m x n with a long k splits k over the idle SMs, and fewer SMs never make it faster") {
  const overlap::sim::cost_model h100(overlap::sim::h100_node());
  const overlap::sim::machine& m = h100.machine();
  // A ring-exchange chunk of a tp8 QKV GEMM: 512 of 4,096 tokens, 768 outputs, k 4,096: 12 tiles.
  const sc::op chunk = gemm(512, 768, 4096);
  const auto split = h100.waves_of(chunk, 132);
  CHECK(split.split > 1);
  CHECK(split.waves == 1);
  CHECK(split.reduce_us > 0);
  const double one_wave = 2.0 * 128 * 256 * 4096 / (m.peak_flops_per_us / m.sms * m.gemm_efficiency);
  const double ideal = chunk.flops / (m.peak_flops_per_us * m.gemm_efficiency);
  const double us = h100.compute_us(chunk, 132);
  CHECK(us < 0.5 * one_wave);  // unsplit, 12 SMs would do all the work
  CHECK(us > ideal);           // never better than the whole GPU at the GEMM efficiency
  CHECK(h100.wave_us(chunk, 132) == doctest::Approx(one_wave / static_cast<double>(split.split)).epsilon(0.02));
  // The lower bound charges each GEMM its time on the whole GPU: fewer SMs must not beat it.
  for (const sc::op& o : {chunk, gemm(256, 256, 8192), gemm(4096, 4096, 4096), gemm(128, 128, 64)}) {
    double previous = h100.compute_us(o, 1);
    for (int sms = 2; sms <= 132; ++sms) {
      const double now = h100.compute_us(o, sms);
      CHECK(now <= previous * (1 + 1e-12));
      previous = now;
    }
  }
  // Without a k tile the machine has no split-K.
  overlap::sim::machine no_split = m;
  no_split.gemm_tile_k = 0;
  CHECK(overlap::sim::cost_model(no_split).waves_of(chunk, 132).split == 1);
}
