// Calibration from a timed run, without a GPU: the executor's timing mode on the recording shim
// (each interval's fake time follows its start event, so every interval has its own), the
// measured-cost document written from it, read back by `sim::measured_cost_model`: every op
// costs what it measured (compute on the whole GPU, communication as is), and a simulation of
// the step takes those costs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/cost/measured_cost.hpp>
#include <overlap/sim/cost/measured_cost_writer.hpp>
#include <overlap/sim/simulate.hpp>

#include "generated_fixture.hpp"
#include "shim_fixture.hpp"

using namespace shim;
namespace ov = overlap;
namespace cu = overlap::cuda;
namespace sim = overlap::sim;

namespace {

/// `p` timed once on the shim; interval k (by its start event) takes 10 + 2.5 k us.
cu::step_timing time_on_shim(const sc::program& p) {
  const std::unique_ptr<char[]> memory = reset_with_memory_for(p);
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms, memory.get()));
  s().elapsed_ms = [](int start, int, int) {
    const auto k = std::find(s().timing_events.begin(), s().timing_events.end(), start) - s().timing_events.begin();
    return static_cast<float>(0.010 + 0.0025 * static_cast<double>(k / 2));
  };
  return exec.run_timed();
}

/// A file in the build tree, removed when it goes.
struct temp_file {
  std::string path;
  explicit temp_file(std::string name) : path(std::move(name)) {}
  ~temp_file() { std::remove(path.c_str()); }
};

const sim::machine h100 = sim::h100_node();
}  // namespace

TEST_CASE("a timed composed tp2 pp2 vpp2 dp2 ep2 step round-trips: every op costs what it measured") {
  using cfg = composed_moe;
  const auto step = cfg::schedule::generate(composed_moe_workload());
  REQUIRE(step.size() == 8);
  int grouped = 0;
  for (const sc::program& p : step) {
    CAPTURE(p.rank);
    const cu::step_timing t = time_on_shim(p);
    // Every display name is its op's alone here, so each entry is one op's own time.
    std::map<std::string, int> names;
    for (const cu::op_time& o : t.ops) ++names[sc::display_name(o.key)];
    for (const auto& entry : names) CHECK_MESSAGE(entry.second == 1, entry.first);

    const temp_file file("calibration_rank" + std::to_string(p.rank) + ".json");
    sim::write_measured_costs(file.path, p, t.us_per_op());
    const auto measured = sim::measured_cost_model::from_file(h100, file.path);
    CHECK(measured.measured() == t.ops.size());
    for (const cu::op_time& o : t.ops) {
      CAPTURE(sc::display_name(o.key));
      const sc::op& op = p.ops[static_cast<std::size_t>(o.op)];
      if (o.kind == sc::op_kind::compute) {
        CHECK(measured.compute_us(op, h100.sms) == doctest::Approx(o.us).epsilon(1e-12));
        CHECK(measured.compute_us(op, h100.sms / 2) == doctest::Approx(2 * o.us).epsilon(1e-12));
      } else {
        CHECK(measured.comm_us(op, sim::placement{2, 0}) == o.us);
        CHECK(measured.comm_us(op, sim::placement{16, 15}) == o.us);  // whatever the placement
      }
      grouped += o.interval_ops > 1;
    }
  }
  CHECK(grouped > 0);  // the step has NCCL groups (pipeline p2p), timed as a whole
}

TEST_CASE("a simulation with the measured costs of a timed DP step runs each op for its measured time") {
  using cfg = ov::config<ov::dp<4>, ov::overlap_grad_reduce<>, ov::overlap_param_gather<>, ov::distributed_optimizer<>>;
  const auto step = sc::data_parallel_step(cfg::settings, cfg::resolved, small_workload(4, 2));
  // The ranks' programs differ only in their rank, so one rank's times are every rank's.
  const cu::step_timing t = time_on_shim(step[0]);
  for (const sc::program& p : step) CHECK(time_on_shim(p).us_per_op() == t.us_per_op());
  const temp_file file("calibration_dp.json");
  sim::write_measured_costs(file.path, step[0], t.us_per_op());
  const auto measured = sim::measured_cost_model::from_file(h100, file.path);

  // Unlimited resources: every kernel on the whole GPU, so each interval is one op's cost.
  const sim::result r = sim::simulate(step, measured, {.unlimited_resources = true});
  REQUIRE_FALSE(r.deadlock);
  const std::vector<double> us = t.us_per_op();
  int compute = 0, comm = 0;
  for (const sim::interval& i : r.intervals) {
    const sc::op& o = step[static_cast<std::size_t>(i.rank)].ops[static_cast<std::size_t>(i.op)];
    if (o.kind != sc::op_kind::compute && !sc::is_communication(o.kind)) continue;
    CAPTURE(sc::display_name(o));
    CHECK(i.end_us - i.start_us == doctest::Approx(us[static_cast<std::size_t>(i.op)]).epsilon(1e-9));
    ++(o.kind == sc::op_kind::compute ? compute : comm);
  }
  CHECK(compute > 0);
  CHECK(comm > 0);
  const sim::result before = sim::simulate(step, sim::analytic_cost_model(h100), {.unlimited_resources = true});
  CHECK(r.step_time_us != doctest::Approx(before.step_time_us));
}

TEST_CASE("per op type, the document gives every op of a type the mean of the type's measured times") {
  using cfg = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::dp<2>,
                         ov::overlap_grad_reduce<>, ov::distributed_optimizer<>>;
  const auto step = sc::compose_step(cfg::settings, cfg::resolved, small_workload(2, 2), sc::family_set{});
  const sc::program& p = step[0];
  const cu::step_timing t = time_on_shim(p);
  const auto doc = sim::measured_cost_document(p, t.us_per_op(), sim::measured_entries::per_type);
  const sim::measured_cost_model measured(h100, doc);
  std::map<sc::op_type, std::pair<double, int>> by_type;
  for (const cu::op_time& o : t.ops) {
    by_type[o.key.type].first += o.us;
    ++by_type[o.key.type].second;
  }
  CHECK(measured.measured() == by_type.size());
  bool spread = false;  // some type's ops measured differently, so its mean is no op's own time
  for (const cu::op_time& o : t.ops) {
    const auto& [sum, count] = by_type[o.key.type];
    const sc::op& op = p.ops[static_cast<std::size_t>(o.op)];
    const double cost = o.kind == sc::op_kind::compute ? measured.compute_us(op, h100.sms) : measured.comm_us(op, {});
    CHECK(cost == doctest::Approx(sum / count).epsilon(1e-12));
    spread = spread || cost != doctest::Approx(o.us);
  }
  CHECK(spread);
}
