// The PP generator: 1F1B order per stage, programs that verify for several depths, and a
// simulated pipeline bubble equal to the 1F1B formula (p - 1) / (m + p - 1).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/pipeline_parallel.hpp>
#include <overlap/sim/simulator.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

TEST_CASE("1F1B: warm-up forwards, then one forward and one backward, then the drain") {
  CHECK(sc::one_f_one_b(0, 4, 6) == std::vector<int>{0, 1, 2, 3, -1, 4, -2, 5, -3, -4, -5, -6});
  CHECK(sc::one_f_one_b(3, 4, 3) == std::vector<int>{0, -1, 1, -2, 2, -3});
  CHECK(sc::one_f_one_b(0, 4, 2) == std::vector<int>{0, 1, -1, -2});  // fewer micro-batches than stages
}

TEST_CASE("the 1F1B pipeline verifies and its bubble is (p - 1) / (m + p - 1)") {
  const ov::sim::cost_model h100(ov::sim::h100_node());
  const auto check_depth = [&](const ov::settings& s, const ov::resolved_settings& r, int stages) {
    for (const int m : {1, 4, 8}) {
      sc::workload w;
      w.layers = 8;
      w.micro_batches = m;
      const auto step = sc::pipeline_parallel_step(s, r, w);
      std::string problems;
      for (const auto& f : ov::verify::verify(step)) problems += ov::verify::describe(f, step) + "\n";
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
