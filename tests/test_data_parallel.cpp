// The DP generator: its programs verify, and on an H100 node with a compute-bound backward only
// the last bucket's reduction is exposed.
#include <doctest/doctest.h>

#include <string>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulator.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
constexpr int dp_family = static_cast<int>(sc::family::dp);

template <class Cfg>
std::vector<sc::program> step_of(const sc::workload& w) {
  return sc::data_parallel_step(Cfg::settings, Cfg::resolved, w);
}

}  // namespace

TEST_CASE("buckets are formed in reverse layer order") {
  sc::workload w;  // 243 M parameters per layer
  using cfg = ov::config<ov::dp<8>, ov::overlap_grad_reduce<>, ov::bucket_size<500'000'000>>;
  const auto buckets = sc::gradient_buckets(cfg::resolved, w.layers, w.layer_parameters());
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0] == std::vector<int>{7, 6, 5});  // a bucket closes once it holds >= 500 M
  CHECK(buckets[1] == std::vector<int>{4, 3, 2});
  CHECK(buckets[2] == std::vector<int>{1, 0});
}

TEST_CASE("with DP overlap and a compute-bound backward only the last bucket's reduction is exposed") {
  sc::workload w;
  w.micro_batches = 2;
  using overlapped = ov::config<ov::dp<8>, ov::overlap_grad_reduce<>>;  // DP-13: 40 M buckets
  using serial = ov::config<ov::dp<8>>;
  const auto o_step = step_of<overlapped>(w);
  const auto s_step = step_of<serial>(w);
  INFO(ov::verify::verify_report(o_step));
  CHECK(ov::verify::verify(o_step).empty());
  CHECK(ov::verify::verify(s_step).empty());

  const ov::sim::cost_model h100(ov::sim::h100_node());
  const auto o = ov::sim::simulate(o_step, h100);
  const auto s = ov::sim::simulate(s_step, h100);
  REQUIRE_FALSE(o.deadlock);
  const auto buckets = sc::gradient_buckets(overlapped::resolved, w.layers, w.layer_parameters());
  REQUIRE(buckets.size() == 8);  // one layer (243 M parameters) per bucket
  const double one_bucket = o.comm_us[dp_family] / 8;
  MESSAGE("dp comm " << o.comm_us[dp_family] << " us, exposed " << o.exposed_comm_us[dp_family]
                     << " us; serial step " << s.step_time_us << " us, overlapped " << o.step_time_us);
  CHECK(o.exposed_comm_us[dp_family] == doctest::Approx(one_bucket).epsilon(0.05));
  CHECK(s.exposed_comm_us[dp_family] == doctest::Approx(s.comm_us[dp_family]));
  CHECK(o.step_time_us < s.step_time_us);
}

TEST_CASE("param all-gathers are prefetched one bucket ahead with the distributed optimizer") {
  sc::workload w;
  w.micro_batches = 1;
  using cfg = ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::num_buckets<4>>;
  const auto step = step_of<cfg>(w);
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const auto r = ov::sim::simulate(step, ov::sim::cost_model(ov::sim::h100_node()));
  REQUIRE_FALSE(r.deadlock);
  // Exposed: the first gather and the last reduction, not the eight in between.
  const double per_op = r.comm_us[dp_family] / 8;
  CHECK(r.exposed_comm_us[dp_family] < 2.5 * per_op);
  using no_overlap = ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::num_buckets<4>,
                                ov::overlap_grad_reduce<false>, ov::overlap_param_gather<false>>;
  const auto serial = ov::sim::simulate(step_of<no_overlap>(w), ov::sim::cost_model(ov::sim::h100_node()));
  CHECK(serial.exposed_comm_us[dp_family] == doctest::Approx(serial.comm_us[dp_family]));
}
