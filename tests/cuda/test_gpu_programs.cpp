// The programs and resources of the GPU test, the GPU examples and overlap-profile's step check,
// through the executor on the
// recording stand-in: what the GPU runs passes the pre-flight on every CI machine, and issues
// the calls it should. (gpu_test.cpp once sent to itself on a one-rank communicator, which the
// pre-flight refuses; CI never saw it, the test skipping without a GPU.)
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <overlap/sim/machine/machine.hpp>

#include "generated_fixture.hpp"
#include "gpu_programs.hpp"
#include "model_step_programs.hpp"
#include "shim_fixture.hpp"
#include "step_check.hpp"

namespace {
/// The stand-in's copy: logs "copy @to <- @from bytes s<stream>".
void logged_copy(void* to, const void* from, std::int64_t bytes, int stream) {
  shim::s().log.push_back("copy " + shim::recording_api::at(to) + " <- " + shim::recording_api::at(from) + " " +
                          std::to_string(bytes) + " s" + std::to_string(stream));
}
}  // namespace

TEST_CASE("the GPU test's one-rank program passes the pre-flight and issues its collectives") {
  shim::reset();
  const shim::sc::program p = gpu_programs::one_rank_program();
  auto comms = shim::comms_for(p);
  constexpr std::int64_t n = gpu_programs::bytes;
  std::vector<char> device(6 * n);  // address space for the six arrays; the stand-in never touches it
  char* base = device.data();
  shim::s().base = base;
  const gpu_programs::one_rank_memory memory{base, base + n, base + 2 * n, base + 3 * n, base + 4 * n, base + 5 * n};
  shim::executor exec(p, gpu_programs::one_rank_resources<shim::recording_api>(comms.at("solo").get(), memory,
                                                                               shim::dtype::fp32, logged_copy));
  exec.run();
  const std::string count = " count " + std::to_string(n / 4);
  const std::vector<std::string> want{
      "copy @" + std::to_string(n) + " <- @0 " + std::to_string(n) + " s100",
      "all_reduce solo s101 @" + std::to_string(n) + " -> @" + std::to_string(2 * n) + count,
      "all_gather solo s101 @" + std::to_string(n) + " -> @" + std::to_string(3 * n) + count,
      "send solo s101 @" + std::to_string(n) + count + " to 0",
      "recv solo s101 @" + std::to_string(4 * n) + count + " from 0",
      "copy @" + std::to_string(5 * n) + " <- @" + std::to_string(2 * n) + " " + std::to_string(n) + " s100"};
  std::vector<std::string> got;
  for (const std::string& line : shim::s().log)
    if (line.starts_with("copy") || line.starts_with("all_") || line.starts_with("send") || line.starts_with("recv"))
      got.push_back(line);
  CHECK(got == want);
}

TEST_CASE("the model-step example's data-parallel step passes the pre-flight in every variant, on each rank") {
  const model_step::sizes z{64, 3, 1, 2};
  for (const auto v : {model_step::variant::overlapped, model_step::variant::serialized,
                       model_step::variant::compute_only, model_step::variant::comm_only})
    for (int rank = 0; rank < 2; ++rank) {
      shim::reset();
      const shim::sc::program p = model_step::step_program(rank, 2, z, v);
      auto comms = shim::comms_for(p);
      std::vector<char> device(3 * 64 * 64 * 4);
      shim::s().base = device.data();
      shim::executor exec(p, model_step::step_resources<shim::recording_api>(
                                 comms.at("dp").get(), shim::dtype::fp32, shim::log_kernel, shim::log_kernel,
                                 [&](int layer) { return device.data() + layer * 64 * 64 * 4; }));
      exec.run();
      CAPTURE(static_cast<int>(v));
      const bool compute = v != model_step::variant::comm_only, comm = v != model_step::variant::compute_only;
      CHECK(shim::lines_starting("kernel fc1_wgrad").size() == (compute ? 3u : 0u));
      // Two all-reduces of each layer's gradient in place, from the top layer (2) down.
      CHECK(shim::lines_starting("all_reduce dp").size() == (comm ? 6u : 0u));
      if (comm)
        CHECK(shim::lines_starting("all_reduce dp")[0].find("@32768 -> @32768 count 4096") != std::string::npos);
    }
}

TEST_CASE("the model-step example's generated step passes the pre-flight with its bindings") {
  const shim::sc::program p =
      model_step::generated_config::schedule::generate(model_step::generated_workload(2)).front();
  auto memory = shim::reset_with_memory_for(p);
  shim::comm_state solo{.name = "solo"};
  int gemms = 0, stand_ins = 0;
  shim::executor exec(p, model_step::generated_resources<shim::recording_api>(
                             p, &solo, shim::dtype::unknown, [&](const shim::sc::op_key&, int) { ++gemms; },
                             [&](const shim::sc::op_key&, int) { ++stand_ins; },
                             [&](std::int64_t) { return static_cast<void*>(memory.get()); }));
  exec.run();
  int want_gemms = 0, want_others = 0;
  for (const shim::sc::op& o : p.ops)
    if (o.kind == shim::sc::op_kind::compute)
      (model_step::gemm_types.contains(o.key.type) ? want_gemms : want_others)++;
  CHECK(gemms == want_gemms);
  CHECK(stand_ins == want_others);
  CHECK(gemms > 0);
}

TEST_CASE("overlap-profile's step check: its two one-GPU programs pass the pre-flight with their copies") {
  const overlap_profile::one_gpu_step s = overlap_profile::check_step();
  CHECK(s.comm_sizes == std::vector<int>(s.overlapped.comms.size(), 2));
  int compute_ops = 0, comm_ops = 0;
  std::set<std::string> names;
  for (const shim::sc::op& o : s.overlapped.ops) {
    if (o.kind == shim::sc::op_kind::compute) {
      ++compute_ops;
      CHECK(names.insert(shim::sc::display_name(o.key)).second);  // the kernels find their op by it
    }
    if (shim::sc::is_communication(o.kind)) ++comm_ops;
  }
  REQUIRE(comm_ops > 0);
  for (const shim::sc::program* p : {&s.overlapped, &s.serialized}) {
    shim::reset();
    int computed = 0, communicated = 0;
    std::int64_t moved = 0, expected = 0;
    for (const shim::sc::op& o : p->ops)
      if (shim::sc::is_communication(o.kind)) expected += o.bytes / 2;  // dp 2: half of each tensor
    shim::executor exec(*p, overlap_profile::check_resources<shim::recording_api>(
                                s, *p, [&](const shim::sc::op&, int) { ++computed; },
                                [&](const shim::sc::op&, std::int64_t bytes, int ctas, int) {
                                  ++communicated;
                                  moved += bytes;
                                  CHECK(ctas == 16);
                                },
                                16));
    exec.run();
    CHECK(computed == compute_ops);
    CHECK(communicated == comm_ops);
    CHECK(moved == expected);
    // Serialized, every op is on the compute stream.
    if (p == &s.serialized)
      for (const shim::sc::op& o : p->ops) CHECK(o.stream == 0);
  }
}

TEST_CASE("overlap-profile's step check: the predictor prices the kernels the check runs") {
  const overlap_profile::one_gpu_step s = overlap_profile::check_step();
  const overlap::sim::machine h200 = overlap::sim::h200_node();
  const double overlapped = overlap_profile::predicted_us(h200, s, s.overlapped, 8);
  const double serialized = overlap_profile::predicted_us(h200, s, s.serialized, 8);
  MESSAGE("predicted on the H200 profile: overlapped " << overlapped / 1000 << " ms, serialized " << serialized / 1000
                                                       << " ms");
  CHECK(overlapped < 0.95 * serialized);  // the demo shows overlap on one GPU
  // Serialized, the step is about every op's time one after another.
  const overlap_profile::check_cost cost(h200, s);
  double sum = 0;
  for (const shim::sc::op& o : s.serialized.ops) {
    if (o.kind == shim::sc::op_kind::compute) sum += cost.compute_us(o, h200.sms);
    if (shim::sc::is_communication(o.kind)) sum += cost.comm_us(o, overlap::sim::placement{1, 0});
  }
  CHECK(serialized == doctest::Approx(sum).epsilon(0.02));
  // A copy kernel of 16 CTAs moves at the probe's rate: a reduce-scatter of 1 GiB over 2 ranks
  // moves 512 MiB, as the probe's copy did in 1082 us.
  shim::sc::op rs;
  rs.kind = shim::sc::op_kind::collective;
  rs.coll = shim::sc::collective::reduce_scatter;
  rs.comm = 0;
  rs.bytes = std::int64_t{1} << 30;
  CHECK(cost.comm_us(rs, overlap::sim::placement{1, 0}) == doctest::Approx(1082.0).epsilon(1e-9));
}
