// The Blackwell presets (sim/machine/blackwell.hpp): their published figures, GEMMs at the measured B200
// throughput, the NVL72 racks' one NVLink domain, and a step that simulates on each.
#include <doctest/doctest.h>

#include <cstdint>

#include <overlap/overlap.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/sim/cost/analytic.hpp>
#include <overlap/sim/machine/blackwell.hpp>
#include <overlap/sim/machine/presets.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

TEST_CASE("node presets by name and by GPU, a GPU without one has none") {
  REQUIRE(ov::sim::preset_named("gb300") != nullptr);
  CHECK(ov::sim::preset_named("gb300")->make().domain_gpus() == 72);
  CHECK(ov::sim::preset_for(ov::gpu_model::h200)->name == "h200");
  CHECK(ov::sim::preset_for(ov::gpu_model::a100) == nullptr);
  CHECK(ov::sim::preset_named("vr200") == nullptr);
  CHECK(ov::sim::preset_list() == "h100, h200, b200, b300, gb200, gb300");
  CHECK(ov::sim::preset_list([](const ov::sim::machine& m) { return m.fp4_gemm_speedup > 0; }) ==
        "b200, b300, gb200, gb300");
}

TEST_CASE("the presets hold the published figures") {
  const ov::sim::machine b200 = ov::sim::b200_node(), b300 = ov::sim::b300_node(), gb200 = ov::sim::gb200_nvl72(),
                         gb300 = ov::sim::gb300_nvl72();
  CHECK(b200.sms == 148);
  CHECK(gb200.sms == 152);
  CHECK(b200.peak_flops_per_us == 2250e6);
  CHECK(gb300.peak_flops_per_us == 2500e6);
  CHECK(b200.memory_bytes_per_us == 7.7e6);
  CHECK(b200.memory_capacity_bytes == 180e9);
  CHECK(b300.memory_capacity_bytes == 288e9);
  CHECK(gb200.memory_capacity_bytes == 186e9);
  CHECK(gb300.memory_capacity_bytes == 288e9);
  CHECK(ov::sim::h100_node().memory_capacity_bytes == 80e9);
  CHECK(ov::sim::h200_node().memory_capacity_bytes == 141e9);
  CHECK(gb200.domain_gpus() == 72);
  CHECK(gb200.gpus_per_node == 64);  // a job's ranks fill 64 of a rack's 72 GPUs (placement.hpp)
  CHECK(b300.domain_gpus() == 8);
  CHECK(b300.gpus_per_node == 8);
  CHECK(b200.network_bytes_per_us == 48e3);   // ConnectX-7
  CHECK(gb300.network_bytes_per_us == 96e3);  // ConnectX-8, twice ConnectX-7's achieved rate
  for (const ov::sim::machine& m : {b200, b300, gb200, gb300}) {
    CAPTURE(m.name);
    CHECK_FALSE(m.persistent_gemms);  // Cluster Launch Control schedules tiles dynamically
    CHECK(m.profile == nullptr);
    CHECK(m.clock_ratio() == doctest::Approx(1580.0 / 1965));
  }
}

TEST_CASE("a large bf16 GEMM runs at the measured B200 throughput at the benchmark's clock") {
  ov::sim::machine bench = ov::sim::b200_node();
  bench.sustained_clock_mhz = bench.benchmark_clock_mhz;
  const ov::sim::analytic_cost_model b200(bench);
  sc::op o;
  o.kind = sc::op_kind::compute;
  o.key.type = sc::op_type::fc1_fprop;
  o.gemm = {8192, 8192, 8192};
  o.flops = 2.0 * 8192 * 8192 * 8192;
  // torch.matmul bf16 at 8192^3 on B200: 1.42 PF (pytorch/ao PR #2427).
  CHECK(o.flops / b200.compute_us(o, 148) / 1e6 == doctest::Approx(1420).epsilon(0.1));  // TFLOP/s
}

TEST_CASE("a step simulates on each preset, and an NVL72 rack keeps tp x dp = 64 inside NVLink") {
  ov::settings s;
  s.tensor_model_parallel_size = 2;
  s.sequence_parallel = true;
  s.data_parallel_size = 32;
  s.distributed_optimizer = true;
  s.precision = ov::dtype::bf16;
  s.gpu = ov::gpu_model::b200;
  sc::workload w;
  w.num_layers = 4;
  w.micro_batches = 2;
  w.hidden_size = 2048;
  w.ffn_hidden_size = 8192;
  w.num_attention_heads = 16;
  w.vocab_size = 32000;
  double step[4] = {};
  const ov::sim::machine machines[] = {ov::sim::b200_node(), ov::sim::b300_node(), ov::sim::gb200_nvl72(),
                                       ov::sim::gb300_nvl72()};
  for (int i = 0; i < 4; ++i) {
    const ov::plan::class_simulation run = ov::plan::simulate_by_class(s, w, ov::sim::analytic_cost_model(machines[i]));
    CAPTURE(machines[i].name);
    CHECK_FALSE(run.simulated.deadlock);
    step[i] = run.simulated.step_time_us;
  }
  // 64 GPUs: eight B200 nodes reduce gradients over 48 GB/s NICs, one GB200 rack over NVLink.
  CHECK(step[2] < step[0]);
}
