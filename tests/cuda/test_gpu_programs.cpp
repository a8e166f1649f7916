// The programs and resources of the GPU test and the GPU examples, through the executor on the
// recording stand-in: what the GPU runs passes the pre-flight on every CI machine, and issues
// the calls it should. (gpu_test.cpp once sent to itself on a one-rank communicator, which the
// pre-flight refuses; CI never saw it, the test skipping without a GPU.)
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "generated_fixture.hpp"
#include "gpu_programs.hpp"
#include "model_step_programs.hpp"
#include "shim_fixture.hpp"

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
  const std::vector<std::string> want{"copy @" + std::to_string(n) + " <- @0 " + std::to_string(n) + " s100",
                                      "all_reduce solo s101 @" + std::to_string(n) + " -> @" + std::to_string(2 * n) + count,
                                      "all_gather solo s101 @" + std::to_string(n) + " -> @" + std::to_string(3 * n) + count,
                                      "send solo s101 @" + std::to_string(n) + count + " to 0",
                                      "recv solo s101 @" + std::to_string(4 * n) + count + " from 0",
                                      "copy @" + std::to_string(5 * n) + " <- @" + std::to_string(2 * n) + " " +
                                          std::to_string(n) + " s100"};
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
      if (comm) CHECK(shim::lines_starting("all_reduce dp")[0].find("@32768 -> @32768 count 4096") != std::string::npos);
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
    if (o.kind == shim::sc::op_kind::compute) (model_step::gemm_types.contains(o.key.type) ? want_gemms : want_others)++;
  CHECK(gemms == want_gemms);
  CHECK(stand_ins == want_others);
  CHECK(gemms > 0);
}
