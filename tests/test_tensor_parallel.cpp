// The TP generator: its programs verify, overlap shortens the step; ring exchange hides its
// transfers (the local chunk is multiplied first, the own chunk last) and the pipelined split
// exposes the reduce-scatter of its last split, which no GEMM is left to hide.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulator.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
constexpr int tp_family = static_cast<int>(sc::family::tp);

struct ring_reduce_scatter {
  using proj_fprop = ov::ub::ring_exchange<>;
  using fc2_fprop = ov::ub::ring_exchange<>;
};

/// A tp = 4 step made of one GEMM slot, on an H100 node (with `connections` hardware queues).
template <class Build>
ov::sim::result one_gemm(Build build, int connections = 8) {
  sc::workload w;
  std::vector<sc::program> step;
  for (int rank = 0; rank < 4; ++rank) {
    sc::program p;
    p.rank = rank;
    sc::detail::emitter e(p);
    static const ov::ub::resolved_config slots{};
    sc::detail::tp_builder b(e, e.add_stream(sc::stream_role::compute, 0), {"tp", {0, 1, 2, 3}}, rank, w, 2, slots);
    build(b, e.buffer(sc::detail::activation(0, 0)));
    step.push_back(std::move(p));
  }
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  return ov::sim::simulate(step, ov::sim::cost_model(ov::sim::h100_node()),
                           {.cuda_device_max_connections = connections});
}

/// One ring chunk on an H100 node: a quarter of 4096 tokens x 4096 hidden in bf16 over NVLink.
double one_chunk_us() {
  const sc::op chunk{.kind = sc::op_kind::send, .bytes = 4096LL * 4096 * 2 / 4, .sms = 0};  // copy engine, as TE
  return ov::sim::cost_model(ov::sim::h100_node()).comm_us(chunk, 2, false);
}
}  // namespace

TEST_CASE("TP overlap: every slot method verifies and shortens the step") {
  sc::workload w;
  w.num_layers = 2;
  w.micro_batches = 1;
  using bf16 = ov::precision<ov::dtype::bf16>;
  using off = ov::config<ov::tp<4>, ov::sequence_parallel<>, bf16>;
  using defaults = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, bf16>;
  using ring = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, bf16,
                          ov::tp_comm_overlap_cfg<ring_reduce_scatter>>;
  using lora = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::fp8<>, bf16,
                          ov::tp_comm_overlap_cfg<ov::ub::userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora>>;
  const ov::sim::cost_model h100(ov::sim::h100_node());
  const auto baseline = ov::sim::simulate(sc::tensor_parallel_step(off::settings, off::resolved, w), h100);
  CHECK(baseline.exposed_comm_us[tp_family] == doctest::Approx(baseline.comm_us[tp_family]));
  using named_step = std::pair<std::string, std::vector<sc::program>>;
  for (const named_step& variant :
       {named_step{"defaults", sc::tensor_parallel_step(defaults::settings, defaults::resolved, w)},
        named_step{"ring", sc::tensor_parallel_step(ring::settings, ring::resolved, w)},
        named_step{"lora", sc::tensor_parallel_step(lora::settings, lora::resolved, w)}}) {
    const std::string& name = variant.first;  // not a structured binding: clang 14 cannot capture one
    const std::vector<sc::program>& step = variant.second;
    CAPTURE(name);
    INFO(ov::verify::verify_report(step));
    CHECK(ov::verify::verify(step).empty());
    // With TP overlap the configuration runs at CUDA_DEVICE_MAX_CONNECTIONS=1 (ENV rules), so each
    // communication kernel issued ahead of its GEMM gets its SMs first.
    const auto r = ov::sim::simulate(step, h100, {.cuda_device_max_connections = 1});
    REQUIRE_FALSE(r.deadlock);
    MESSAGE(name << ": step " << r.step_time_us << " us (baseline " << baseline.step_time_us
                 << "), exposed tp " << r.exposed_comm_us[tp_family] << " us (baseline "
                 << baseline.exposed_comm_us[tp_family] << ")");
    CHECK(r.step_time_us < baseline.step_time_us);
    CHECK(r.exposed_comm_us[tp_family] < 0.3 * baseline.exposed_comm_us[tp_family]);
  }
}

TEST_CASE("ring exchange hides its tp - 1 chunk transfers under the GEMM chunks") {
  const ov::ub::slot ring = ov::ub::default_knobs(ov::ub::method::ring_exchange);
  const auto rs = one_gemm([&](sc::detail::tp_builder& b, int in) {
    b.gemm_reduce_scatter(sc::op_type::fc2_fprop, ring, {.layer = 0, .micro_batch = 0}, in, 4e12);
  });
  const auto ag = one_gemm([&](sc::detail::tp_builder& b, int in) {
    b.all_gather_gemm(sc::op_type::fc1_fprop, ring, {.layer = 0, .micro_batch = 0}, in, 4e12);
  });
  for (const auto& r : {rs, ag}) {
    REQUIRE_FALSE(r.deadlock);
    CHECK(r.comm_us[tp_family] == doctest::Approx(3 * one_chunk_us()).epsilon(0.01));
    CHECK(r.exposed_comm_us[tp_family] < 0.05 * one_chunk_us());
  }
}

TEST_CASE("the pipelined split exposes the reduce-scatter of its last split, with one connection") {
  const ov::ub::slot pipeline = ov::ub::default_knobs(ov::ub::method::pipeline);  // 4 splits
  const auto build = [&](sc::detail::tp_builder& b, int in) {
    b.gemm_reduce_scatter(sc::op_type::fc2_fprop, pipeline, {.layer = 0, .micro_batch = 0}, in, 4e12);
  };
  const auto one = one_gemm(build, 1);
  REQUIRE_FALSE(one.deadlock);
  CHECK(one.exposed_comm_us[tp_family] == doctest::Approx(one.comm_us[tp_family] / 4).epsilon(0.05));
  // With more queues the next split's GEMM, on the compute stream's queue, starts as soon as the
  // split before it ends and holds every SM (Hopper's GEMMs are persistent): each reduce-scatter
  // waits one more split, and the last two are exposed.
  const auto eight = one_gemm(build, 8);
  REQUIRE_FALSE(eight.deadlock);
  CHECK(eight.exposed_comm_us[tp_family] == doctest::Approx(eight.comm_us[tp_family] / 2).epsilon(0.05));
  CHECK(eight.step_time_us > one.step_time_us);
}

TEST_CASE("without overlap the all-gather and reduce-scatter are fully exposed") {
  const ov::ub::slot none{};
  const auto r = one_gemm([&](sc::detail::tp_builder& b, int in) {
    const int fc1 = b.all_gather_gemm(sc::op_type::fc1_fprop, none, {.layer = 0, .micro_batch = 0}, in, 4e12);
    b.gemm_reduce_scatter(sc::op_type::fc2_fprop, none, {.layer = 0, .micro_batch = 0}, fc1, 4e12);
  });
  CHECK(r.exposed_comm_us[tp_family] == doctest::Approx(r.comm_us[tp_family]));
}
