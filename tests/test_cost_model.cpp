// The analytic cost model's GEMMs (sim/cost/cost_model.hpp), the model of a machine without a profile
// (and what stretches a profiled time on fewer SMs): square GEMMs at the measured H100 sweep's
// throughput, and split-K for a small m x n with a long k (TP ring-exchange chunks).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <overlap/sim/cost/analytic.hpp>
#include <overlap/sim/machine/machine.hpp>

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
/// The H100 preset's analytic figures alone.
overlap::sim::machine analytic_h100() {
  overlap::sim::machine m = overlap::sim::h100_node();
  m.profile = nullptr;
  return m;
}
}  // namespace

TEST_CASE("square GEMMs run at about the measured H100 cuBLAS throughput at the benchmark's clock") {
  overlap::sim::machine bench = analytic_h100();
  bench.sustained_clock_mhz = bench.benchmark_clock_mhz;  // a short benchmark run: no power limit
  const overlap::sim::analytic_cost_model h100(bench);
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
  const overlap::sim::analytic_cost_model h100(analytic_h100());
  const overlap::sim::machine& m = h100.machine();
  // A ring-exchange chunk of a tp8 QKV GEMM: 512 of 4,096 tokens, 768 outputs, k 4,096: 12 tiles.
  const sc::op chunk = gemm(512, 768, 4096);
  const auto split = h100.waves_of(chunk, 132);
  CHECK(split.split > 1);
  CHECK(split.waves == 1);
  CHECK(split.reduce_us > 0);
  const double one_wave = 2.0 * 128 * 256 * 4096 / (h100.tensor_flops_per_us(m.gemm_efficiency) / m.sms);
  const double ideal = chunk.flops / h100.tensor_flops_per_us(m.gemm_efficiency);
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
  CHECK(overlap::sim::analytic_cost_model(no_split).waves_of(chunk, 132).split == 1);
}

TEST_CASE("a training step's compute-bound time follows the sustained clock, memory-bound time does not") {
  const overlap::sim::machine trained = analytic_h100();
  overlap::sim::machine bench = trained;
  bench.sustained_clock_mhz = 0;  // the benchmarks' clock throughout
  CHECK(trained.clock_ratio() == doctest::Approx(1575.0 / 1980.0));
  CHECK(bench.clock_ratio() == 1);
  const overlap::sim::analytic_cost_model at_limit(trained), benchmark(bench);
  sc::op attention;
  attention.kind = sc::op_kind::compute;
  attention.key.type = sc::op_type::attn_core_fprop;
  attention.flops = 1e12;
  sc::op norm;
  norm.kind = sc::op_kind::compute;
  norm.key.type = sc::op_type::layernorm_fprop;
  norm.memory_bytes = std::int64_t{1} << 30;
  for (const sc::op& o : {gemm(8192, 8192, 8192), gemm(4096, 4096, 4096), attention}) {
    CAPTURE(sc::to_string(o.key.type));
    CHECK(at_limit.compute_us(o, 132) == doctest::Approx(benchmark.compute_us(o, 132) * 1980.0 / 1575.0));
  }
  CHECK(at_limit.compute_us(norm, 132) == benchmark.compute_us(norm, 132));
}

TEST_CASE("compute_speed scales the analytic model's compute, not memory-bound kernels, and must be positive") {
  const overlap::sim::machine base = analytic_h100();
  overlap::sim::machine faster = base;
  faster.compute_speed = 1.25;
  const overlap::sim::analytic_cost_model one(base), quicker(faster);
  sc::op experts = gemm(4096, 2048, 7168);
  experts.key.type = sc::op_type::experts_fprop;
  sc::op norm;
  norm.kind = sc::op_kind::compute;
  norm.key.type = sc::op_type::layernorm_fprop;
  norm.memory_bytes = std::int64_t{1} << 30;
  for (const sc::op& o : {gemm(8192, 8192, 8192), experts}) {
    CAPTURE(sc::to_string(o.key.type));
    CHECK(quicker.compute_us(o, 132) == doctest::Approx(one.compute_us(o, 132) / 1.25));
    CHECK(quicker.compute_us(o, 66) == doctest::Approx(one.compute_us(o, 66) / 1.25));
  }
  CHECK(quicker.compute_us(norm, 132) == one.compute_us(norm, 132));
  for (const double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    overlap::sim::machine m = base;
    m.compute_speed = bad;
    CHECK_THROWS_WITH_AS(overlap::sim::analytic_cost_model{m},
                         doctest::Contains("compute_speed must be a positive number"), std::invalid_argument);
  }
}
