// The PP generator: 1F1B order per stage, programs that verify for several depths, and a
// simulated pipeline bubble equal to the 1F1B formula (p - 1) / (m + p - 1).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
/// A stage's order as +i for the forward of micro-batch i and -(i + 1) for its backward.
std::vector<int> signed_order(int stage, int stages, int micro_batches, int extra_warmup = 0) {
  std::vector<int> out;
  for (const auto& a : sc::pipeline_order(stage, stages, 1, micro_batches, extra_warmup))
    out.push_back(a.forward ? a.micro_batch : -(a.micro_batch + 1));
  return out;
}
}  // namespace

TEST_CASE("1F1B: warm-up forwards, then one forward and one backward, then the drain") {
  CHECK(signed_order(0, 4, 6) == std::vector<int>{0, 1, 2, 3, -1, 4, -2, 5, -3, -4, -5, -6});
  CHECK(signed_order(3, 4, 3) == std::vector<int>{0, -1, 1, -2, 2, -3});
  CHECK(signed_order(0, 4, 2) == std::vector<int>{0, 1, -1, -2});  // fewer micro-batches than stages
  // EP overlap: one more warm-up forward, so each steady forward pairs with an earlier backward.
  CHECK(signed_order(0, 1, 3, 1) == std::vector<int>{0, 1, -1, 2, -2, -3});
  // The steady pairs: forward 1 with backward 0, forward 2 with backward 1; none when the
  // warm-up covers every forward.
  const int w = sc::pipeline_warmup(0, 1, 1, 3, 1);
  CHECK(w == 1);
  CHECK_FALSE(sc::steady_pair(0, w, 6));
  CHECK(sc::steady_pair(1, w, 6));
  CHECK_FALSE(sc::steady_pair(2, w, 6));
  CHECK(sc::steady_pair(3, w, 6));
  CHECK_FALSE(sc::steady_pair(4, w, 6));
  for (std::size_t i = 0; i < 8; ++i) CHECK_FALSE(sc::steady_pair(i, 4, 8));  // a warm-up of all 4 forwards
}

TEST_CASE("the 1F1B pipeline verifies and its bubble is (p - 1) / (m + p - 1)") {
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  const auto check_depth = [&](const ov::settings& s, const ov::resolved_settings& r, int stages) {
    for (const int m : {1, 4, 8}) {
      sc::workload w;
      w.num_layers = 8;
      w.micro_batches = m;
      w.vocab_size = 1024;  // the formula assumes equal stages: keep the output layer negligible
      const auto step = sc::pipeline_parallel_step(s, r, w);
      const std::string problems = ov::verify::verify_report(step);
      CAPTURE(stages);
      CAPTURE(m);
      INFO(problems);
      CHECK(problems.empty());
      const auto result = ov::sim::simulate(step, h100);
      REQUIRE_FALSE(result.deadlock);
      // The bubble against the compute a stage needs on the whole GPU: p2p kernels that wait for
      // their partner hold SMs and stretch the GEMMs next to them, which the formula ignores.
      double ideal = 0;
      for (const auto& o : step[0].ops)
        if (o.kind == sc::op_kind::compute) ideal += h100.compute_us(o, h100.machine().sms);
      const double bubble = 1 - ideal / result.step_time_us;
      const double formula = static_cast<double>(stages - 1) / (m + stages - 1);
      CHECK(bubble == doctest::Approx(formula).epsilon(0.05));
    }
  };
  using two = ov::config<ov::pp<2>>;
  using four = ov::config<ov::pp<4>>;
  check_depth(two::settings, two::resolved, 2);
  check_depth(four::settings, four::resolved, 4);
}

TEST_CASE("interleaved 1F1B: upstream's schedule table, warm-up and chunk order") {
  using a = sc::pp_action;
  // pp 2, vpp 2, 2 micro-batches: the table is (mb0 c0)(mb1 c0)(mb0 c1)(mb1 c1); the last stage
  // warms up with (vpp - 1) * pp = 2 forwards, the first with 2 more.
  CHECK(sc::pipeline_order(1, 2, 2, 2) == std::vector<a>{{true, 0, 0},
                                                         {true, 1, 0},
                                                         {true, 0, 1},
                                                         {false, 0, 1},
                                                         {true, 1, 1},
                                                         {false, 1, 1},
                                                         {false, 0, 0},
                                                         {false, 1, 0}});
  CHECK(sc::pipeline_order(0, 2, 2, 2) == std::vector<a>{{true, 0, 0},
                                                         {true, 1, 0},
                                                         {true, 0, 1},
                                                         {true, 1, 1},
                                                         {false, 0, 1},
                                                         {false, 1, 1},
                                                         {false, 0, 0},
                                                         {false, 1, 0}});
  CHECK(sc::pipeline_order(0, 4, 1, 2) == std::vector<a>{{true, 0, 0}, {true, 1, 0}, {false, 0, 0}, {false, 1, 0}});
  CHECK_THROWS_AS(sc::pipeline_order(0, 4, 2, 6), std::invalid_argument);  // 6 % 4 != 0
  // Every stage runs every (micro-batch, chunk) once forward and once backward.
  for (int stage = 0; stage < 4; ++stage) {
    const auto order = sc::pipeline_order(stage, 4, 3, 8);
    CHECK(order.size() == 2u * 3 * 8);
  }
}

namespace {
/// 1 - (compute of stage 0 on the whole GPU) / (simulated step time).
double simulated_bubble(const std::vector<sc::program>& step, const ov::sim::cost_model& cost) {
  const auto result = ov::sim::simulate(step, cost);
  REQUIRE_FALSE(result.deadlock);
  double ideal = 0;
  for (const auto& o : step[0].ops)
    if (o.kind == sc::op_kind::compute) ideal += cost.compute_us(o, cost.machine().sms);
  return 1 - ideal / result.step_time_us;
}

}  // namespace

TEST_CASE("interleaved 1F1B verifies and its bubble is (p - 1) / (v m + p - 1)") {
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  const auto check = [&](const ov::settings& s, int stages, int chunks) {
    const ov::resolved_settings r = ov::derive(s);
    for (const int m : {stages, 2 * stages, 4 * stages}) {
      sc::workload w;
      w.num_layers = 2 * stages * chunks;
      w.micro_batches = m;
      w.vocab_size = 1024;  // the formula assumes equal stages: keep the output layer negligible
      const auto step = sc::pipeline_parallel_step(s, r, w);
      CAPTURE(stages);
      CAPTURE(chunks);
      CAPTURE(m);
      const std::string problems = ov::verify::verify_report(step);
      INFO(problems);
      CHECK(problems.empty());
      const double formula = static_cast<double>(stages - 1) / (chunks * m + stages - 1);
      CHECK(simulated_bubble(step, h100) == doctest::Approx(formula).epsilon(0.05));
    }
  };
  using p2v2 = ov::config<ov::pp<2>, ov::vpp<2>>;
  using p4v2 = ov::config<ov::pp<4>, ov::vpp<2>>;
  using p4v3 = ov::config<ov::pp<4>, ov::vpp<3>>;
  CHECK(p4v2::resolved.overlap_p2p_comm);
  check(p2v2::settings, 2, 2);
  check(p4v2::settings, 4, 2);
  check(p4v3::settings, 4, 3);
}

TEST_CASE("overlap_p2p_comm hides the pipeline transfers that batch_p2p_comm exposes") {
  // Stages on different nodes, where the transfers are worth hiding: inside an NVLink node an
  // activation takes ~4 % of a layer's compute, and the SMs that receives waiting for their
  // partner hold cost about as much as hiding it gains.
  ov::sim::machine one_gpu_nodes = ov::sim::h100_node();
  one_gpu_nodes.gpus_per_node = 1;
  const ov::sim::analytic_cost_model h100(one_gpu_nodes);
  using overlapped = ov::config<ov::pp<4>, ov::vpp<2>>;
  using batched = ov::config<ov::pp<4>, ov::vpp<2>, ov::overlap_p2p_comm<false>, ov::batch_p2p_comm<true>>;
  sc::workload w;
  w.num_layers = 16;
  w.micro_batches = 8;
  const auto fast = sc::pipeline_parallel_step(overlapped::settings, overlapped::resolved, w);
  const auto slow = sc::pipeline_parallel_step(batched::settings, batched::resolved, w);
  const std::string problems = ov::verify::verify_report(fast) + ov::verify::verify_report(slow);
  INFO(problems);
  CHECK(problems.empty());
  // Separate streams and a communicator per direction for the overlapped schedule.
  CHECK(fast[1].streams.size() == 5);
  CHECK(fast[1].comms.size() == 4);
  CHECK(slow[1].streams.size() == 2);
  const auto a = ov::sim::simulate(fast, h100), b = ov::sim::simulate(slow, h100);
  REQUIRE_FALSE(a.deadlock);
  REQUIRE_FALSE(b.deadlock);
  const auto pp = static_cast<int>(sc::family::pp);
  MESSAGE("exposed pp: overlap " << a.exposed_comm_us[pp] << " us, batched " << b.exposed_comm_us[pp] << " us; step "
                                 << a.step_time_us << " vs " << b.step_time_us);
  CHECK(a.exposed_comm_us[pp] < b.exposed_comm_us[pp]);
  CHECK(a.step_time_us < b.step_time_us);
}
