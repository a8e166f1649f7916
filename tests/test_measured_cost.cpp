// The measured cost model: op times from JSON replace the analytic ones for the ops they name,
// and malformed documents are rejected with the entry named.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/measured_cost.hpp>
#include <overlap/sim/simulator.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;
using nlohmann::json;

TEST_CASE("measured op times replace the analytic estimates of the ops they name") {
  using cfg = ov::config<ov::dp<2>, ov::overlap_grad_reduce<>>;
  sc::workload w{.layers = 2, .micro_batches = 1, .seq_length = 1024, .hidden = 1024, .ffn_hidden = 3584};
  const auto step = sc::data_parallel_step(cfg::settings, cfg::resolved, w);
  json doc = {{"compute_us", {{"fwd_l0_mb0", 1000.0}, {"fwd_l1_mb0", 1000.0}, {"bwd_l1_mb0", 2000.0},
                              {"bwd_l0_mb0", 2000.0}, {"optimizer", 10.0}}},
              {"comm_us", {{"grad_reduce_b0", 500.0}}}};
  const ov::sim::measured_cost_model measured(ov::sim::h100_node(), doc);
  CHECK(measured.measured() == 6);
  const auto r = ov::sim::simulate(step, measured);
  REQUIRE_FALSE(r.deadlock);
  // 6.01 ms of compute; both layers share one bucket, so its 0.5 ms reduction follows the last
  // backward, exposed, before the optimizer.
  CHECK(r.compute_us == doctest::Approx(6010.0));
  CHECK(r.comm_us[static_cast<int>(sc::family::dp)] == doctest::Approx(500.0));
  CHECK(r.exposed_comm_us[static_cast<int>(sc::family::dp)] == doctest::Approx(500.0));
  CHECK(r.step_time_us > 6510);
  CHECK(r.step_time_us < 6600);  // plus launch costs
  const ov::sim::cost_model analytic(ov::sim::h100_node());
  CHECK(ov::sim::simulate(step, analytic).step_time_us < 3000);  // the analytic estimate differs
}

TEST_CASE("a measured file is read, and bad input is rejected with the entry named") {
  const std::string path = "measured_cost_test.json";
  std::ofstream(path) << R"({"compute_us": {"fwd_l0_mb0": 12.5}})";
  CHECK(ov::sim::measured_cost_model::from_file(ov::sim::h100_node(), path).measured() == 1);
  std::ofstream(path) << R"({"compute_us": {"fwd_l0_mb0": "fast"}})";
  CHECK_THROWS_WITH_AS(ov::sim::measured_cost_model::from_file(ov::sim::h100_node(), path),
                       doctest::Contains("compute_us[\"fwd_l0_mb0\"]"), std::invalid_argument);
  std::ofstream(path) << R"({"compute_us": {)";
  CHECK_THROWS_AS(ov::sim::measured_cost_model::from_file(ov::sim::h100_node(), path), std::runtime_error);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(ov::sim::measured_cost_model(ov::sim::h100_node(), json{{"compute", json::object()}}),
                       doctest::Contains("unknown key \"compute\""), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ov::sim::measured_cost_model(ov::sim::h100_node(), json{{"comm_us", {{"x", -1}}}}),
                       doctest::Contains("non-negative"), std::invalid_argument);
  CHECK_THROWS_AS(ov::sim::measured_cost_model::from_file(ov::sim::h100_node(), "/nonexistent/costs.json"),
                  std::runtime_error);
}
