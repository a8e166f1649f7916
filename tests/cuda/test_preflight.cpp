// The pre-flight: a program that needs what the trainer did not supply, or that does not fit what
// it supplied, is rejected with every problem named (rank, op index and name, what is missing),
// before any stream, event or NCCL call is made.
#include <doctest/doctest.h>

#include <string>

#include "shim_fixture.hpp"

using namespace shim;
using K = sc::op_kind;

namespace {
sc::program two_rank_program() {
  sc::program p;
  p.rank = 3;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}};
  p.comms = {{"dp", {2, 3}}};
  p.num_events = 1;
  p.ops = {
      {.kind = K::compute, .stream = 0, .name = "bwd"},
      {.kind = K::record, .stream = 0, .event = 0},
      {.kind = K::wait, .stream = 1, .event = 0},
      {.kind = K::collective, .stream = 1, .name = "grads", .coll = sc::collective::all_gather, .comm = 0, .bytes = 128},
  };
  return p;
}

/// The pre-flight message of `p` with `r`, and checks that nothing was created or issued.
std::string rejection(const sc::program& p, resources r) {
  reset();
  std::string message;
  try {
    executor exec(p, std::move(r));
  } catch (const overlap::cuda::preflight_error& e) {
    message = e.what();
    CHECK(e.rank() == p.rank);
  }
  CHECK(s().log.empty());
  CHECK(s().next_stream == 0);
  CHECK(s().next_event == 0);
  return message;
}
}  // namespace

TEST_CASE("the control: everything supplied passes the pre-flight") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  reset();
  CHECK_NOTHROW(executor(p, supply(p, comms)));
}

TEST_CASE("a missing kernel, communicator or buffer is named with the op that needs it") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  r.kernels.erase("bwd");
  const std::string no_kernel = rejection(p, r);
  CHECK(no_kernel.find("[EXEC-PREFLIGHT] rank 3: 1 problem before launch") == 0);
  CHECK(no_kernel.find("rank 3, op 0 'bwd' (compute, stream 0): [EXEC-KERNEL] no kernel 'bwd' was supplied") !=
        std::string::npos);

  r = supply(p, comms);
  r.comms.clear();
  const std::string no_comm = rejection(p, r);
  CHECK(no_comm.find("op 3 'grads' (all_gather on 'dp', stream 1): [EXEC-COMM] no communicator 'dp' was "
                     "supplied; add the NCCL communicator of ranks {2 3}") != std::string::npos);

  r = supply(p, comms);
  r.buffers.clear();
  r.kernels.clear();
  const std::string two = rejection(p, r);
  CHECK(two.find("2 problems") != std::string::npos);
  CHECK(two.find("[EXEC-BUFFER] no buffer 'grads' was supplied") != std::string::npos);
}

TEST_CASE("a buffer smaller than its op needs is rejected; exactly enough passes") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  REQUIRE(r.buffers["grads"].send_bytes == 64);  // all_gather: the input is bytes / n
  REQUIRE(r.buffers["grads"].recv_bytes == 128);
  r.buffers["grads"].recv_bytes = 126;
  CHECK(rejection(p, r).find("buffer 'grads' has 126 recv bytes, the op needs 128") != std::string::npos);
  r = supply(p, comms);
  r.buffers["grads"].send = nullptr;
  CHECK(rejection(p, r).find("buffer 'grads' has no send pointer; the op needs 64 bytes") != std::string::npos);
  r = supply(p, comms);
  r.buffers["grads"].dtype = dtype::fp32;
  r.buffers["grads"].recv_bytes = 128;
  reset();
  CHECK_NOTHROW(executor(p, r));
  r.buffers["grads"].dtype = dtype::unknown;
  CHECK(rejection(p, r).find("dtype of unknown size") != std::string::npos);
}

TEST_CASE("sizes that the element type or the communicator does not divide are rejected") {
  sc::program p = two_rank_program();
  p.ops[3].bytes = 130;  // 65 bytes per rank: not whole bf16 elements
  const auto comms = comms_for(p);
  CHECK(rejection(p, supply(p, comms)).find("130 bytes in 2 equal parts is not a whole number of 2-byte elements") !=
        std::string::npos);
}

TEST_CASE("a communicator of the wrong size or with this rank elsewhere is rejected") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  comms.at("dp")->count = 4;
  CHECK(rejection(p, supply(p, comms)).find("communicator 'dp' has 4 ranks and this process is its rank 1, but the "
                                            "program needs 2 ranks ({2 3}) with global rank 3 at position 1") !=
        std::string::npos);
  comms.at("dp")->count = 2;
  comms.at("dp")->rank = 0;
  CHECK(rejection(p, supply(p, comms)).find("this process is its rank 0") != std::string::npos);
}

TEST_CASE("program wiring that cannot run is rejected: bad stream, wait before record, split group, bad peer") {
  const sc::program base = two_rank_program();
  const auto comms = comms_for(base);

  sc::program p = base;
  p.ops[2].stream = 5;
  CHECK(rejection(p, supply(p, comms)).find("op 2 '' (wait, stream 5): [EXEC-STREAM] stream 5 is not one of") !=
        std::string::npos);

  p = base;
  std::swap(p.ops[1], p.ops[2]);
  CHECK(rejection(p, supply(p, comms)).find("op 1 '' (wait, stream 1): [EXEC-EVENT] waits for event 0 before any record") !=
        std::string::npos);

  p = base;
  p.ops.push_back({.kind = K::send, .stream = 1, .name = "a", .comm = 0, .peer = 0, .bytes = 8, .group = 0});
  p.ops.push_back({.kind = K::compute, .stream = 0, .name = "bwd"});
  p.ops.push_back({.kind = K::recv, .stream = 1, .name = "b", .comm = 0, .peer = 0, .bytes = 8, .group = 0});
  CHECK(rejection(p, supply(p, comms)).find("op 6 'b' (recv on 'dp', stream 1): [EXEC-GROUP] group 0 is not consecutive") !=
        std::string::npos);

  p = base;
  p.ops.push_back({.kind = K::send, .stream = 1, .name = "a", .comm = 0, .peer = 2, .bytes = 8});
  CHECK(rejection(p, supply(p, comms)).find("[EXEC-PEER] peer 2 is not a rank of the 2-rank communicator") !=
        std::string::npos);
}

TEST_CASE("lending streams: one per program stream or none") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  r.streams = {1};
  CHECK(rejection(p, r).find("[EXEC-STREAM] 1 streams were lent for a program with 2") != std::string::npos);
}
