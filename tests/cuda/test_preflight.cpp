// The pre-flight: a program that cannot be read as the program model says, that needs what the
// trainer did not supply, or that does not fit what it supplied, is rejected with every problem
// named (rank, op index and display name, what is missing), before any stream, event or NCCL
// call is made.
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
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc2_dgrad, .at = {.layer = 3, .micro_batch = 1}}},
      {.kind = K::record, .stream = 0, .key = {.type = op_type::event_record}, .event = 0},
      {.kind = K::wait, .stream = 1, .key = {.type = op_type::event_wait}, .event = 0},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::dp_param_gather, .at = {.bucket = 0}},
       .coll = sc::collective::all_gather,
       .comm = 0,
       .bytes = 128},
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

const std::string header_one = "[EXEC-PREFLIGHT] rank 3: 1 problem before launch, nothing was launched:\n  ";
}  // namespace

TEST_CASE("the control: everything supplied passes the pre-flight") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  reset();
  CHECK_NOTHROW(executor(p, supply(p, comms)));
}

TEST_CASE("a missing kernel names its op type once, at the first op of that type") {
  sc::program p = two_rank_program();
  p.ops.push_back(
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc2_dgrad, .at = {.layer = 2, .micro_batch = 1}}});
  p.ops.push_back(
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc2_dgrad, .at = {.layer = 1, .micro_batch = 1}}});
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  r.kernels[op_type::fc2_dgrad] = nullptr;  // an empty std::function is no kernel
  CHECK(rejection(p, r) ==
        header_one +
            "rank 3, op 0 'fc2_dgrad l3 mb1' (compute, stream 0): [EXEC-KERNEL] no kernel for op type 'fc2_dgrad' "
            "(3 ops, the first 'fc2_dgrad l3 mb1'); add cuda::on<op_type::fc2_dgrad>(...) to kernels_for, or set "
            "resources.kernels[op_type::fc2_dgrad]");
}

TEST_CASE("a missing communicator or buffer provider is named with the op that needs it") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  r.comms.clear();
  CHECK(rejection(p, r) == header_one +
                               "rank 3, op 3 'dp_param_gather b0' (all_gather on 'dp', stream 1): [EXEC-COMM] no "
                               "communicator 'dp' was supplied; add the NCCL communicator of ranks {2 3} to "
                               "resources.comms[\"dp\"]");

  r = supply(p, comms);
  r.buffers = nullptr;
  r.kernels = {};
  const std::string two = rejection(p, r);
  CHECK(two.find("[EXEC-PREFLIGHT] rank 3: 2 problems before launch") == 0);
  CHECK(two.find("op 0 'fc2_dgrad l3 mb1' (compute, stream 0): [EXEC-KERNEL] no kernel for op type 'fc2_dgrad'") !=
        std::string::npos);
  CHECK(two.find("op 3 'dp_param_gather b0' (all_gather on 'dp', stream 1): [EXEC-BUFFER] no buffer provider was "
                 "supplied; set resources.buffers to a callable returning each communication op's buffer "
                 "(buffer(const schedule::op&))") != std::string::npos);
}

TEST_CASE("a buffer smaller than its op needs is rejected, exactly enough passes") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  const std::string at = "rank 3, op 3 'dp_param_gather b0' (all_gather on 'dp', stream 1): ";
  const buffer exact = exact_buffers(p)(p.ops[3]);
  REQUIRE(exact.send_bytes == 64);  // all_gather: the input is bytes / n
  REQUIRE(exact.recv_bytes == 128);
  CHECK(rejection(p, edit_buffers(supply(p, comms), [](const sc::op&, buffer& b) { b.recv_bytes = 126; })) ==
        header_one + at +
            "[EXEC-BUFFER] the op's buffer has 126 recv bytes, the op needs 128; allocate a larger buffer");
  CHECK(rejection(p, edit_buffers(supply(p, comms), [](const sc::op&, buffer& b) { b.send = nullptr; })) ==
        header_one + at +
            "[EXEC-BUFFER] the op's send device pointer is null; return the op's device memory from "
            "resources.buffers: .send with at least 64 bytes (.send_bytes)");
  reset();
  CHECK_NOTHROW(executor(p, edit_buffers(supply(p, comms), [](const sc::op&, buffer& b) { b.dtype = dtype::fp32; })));
  CHECK(rejection(p, edit_buffers(supply(p, comms), [](const sc::op&, buffer& b) { b.dtype = dtype::unknown; })) ==
        header_one + at + "[EXEC-BUFFER] the op's buffer has a dtype of unknown size; use an NCCL dtype");
}

TEST_CASE("the provider is asked once per communication op, at construction, never while a step runs") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  int asked = 0;
  reset();
  executor exec(p, edit_buffers(supply(p, comms), [&](const sc::op& o, buffer&) {
                  CHECK(o.key.type == op_type::dp_param_gather);
                  ++asked;
                }));
  CHECK(asked == 1);
  exec.run();
  exec.run();
  CHECK(asked == 1);
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
  CHECK(rejection(p, supply(p, comms)) ==
        header_one +
            "rank 3, op 3 'dp_param_gather b0' (all_gather on 'dp', stream 1): [EXEC-COMM] communicator 'dp' "
            "has 4 ranks and this process is its rank 1, but the program needs 2 ranks ({2 3}) with global "
            "rank 3 at position 1; supply the matching communicator");
  comms.at("dp")->count = 2;
  comms.at("dp")->rank = 0;
  CHECK(rejection(p, supply(p, comms)).find("this process is its rank 0") != std::string::npos);
}

TEST_CASE("program structure is read by the shared semantics, each rule under its EXEC id") {
  const sc::program base = two_rank_program();
  const auto comms = comms_for(base);
  const auto only = [&](const sc::program& p) { return rejection(p, supply(p, comms)); };

  sc::program p = base;
  p.ops[2].stream = 5;
  CHECK(only(p) == header_one +
                       "rank 3, op 2 'event_wait' (wait, stream 5): [EXEC-STREAM] stream 5 does not exist; "
                       "fix the program");

  p = base;
  std::swap(p.ops[1], p.ops[2]);
  CHECK(only(p) == header_one +
                       "rank 3, op 1 'event_wait' (wait, stream 1): [EXEC-EVENT] waits for event 0 before "
                       "any record of it (the wait would not order anything); fix the program");

  p = base;
  p.ops[1].event = 4;
  CHECK(only(p).find("op 1 'event_record' (record, stream 0): [EXEC-EVENT] event 4 does not exist; fix the program") !=
        std::string::npos);

  p = base;
  p.ops.push_back({.kind = K::send, .stream = 1, .comm = 0, .peer = 0, .bytes = 8, .group = 0});
  p.ops.push_back({.kind = K::compute, .stream = 0, .key = {.type = op_type::fc2_dgrad}});
  p.ops.push_back({.kind = K::recv, .stream = 1, .comm = 0, .peer = 0, .bytes = 8, .group = 0});
  CHECK(only(p) == header_one +
                       "rank 3, op 6 'recv' (recv on 'dp', stream 1): [EXEC-GROUP] a group's ops must be "
                       "consecutive in issue order; fix the program");

  p = base;
  p.ops.push_back({.kind = K::send, .stream = 1, .comm = 0, .peer = 1, .bytes = 8});  // peer 1 is this rank
  CHECK(only(p) == header_one +
                       "rank 3, op 4 'send' (send on 'dp', stream 1): [EXEC-PEER] peer 1 is not another "
                       "rank of dp; fix the program");

  p = base;
  p.ops[3].comm = 2;
  CHECK(only(p) == header_one +
                       "rank 3, op 3 'dp_param_gather b0' (all_gather, stream 1): [EXEC-COMM] communicator "
                       "2 does not exist; fix the program");

  p = base;
  p.ops[0].key.type = op_type::tp_all_gather;
  CHECK(only(p) == header_one +
                       "rank 3, op 0 'tp_all_gather l3 mb1' (compute, stream 0): [EXEC-KIND] tp_all_gather "
                       "runs as collective, not as compute; fix the program");

  p = base;
  p.ops[0].reads = {0};  // the program declares no buffers
  CHECK(only(p) == header_one +
                       "rank 3, op 0 'fc2_dgrad l3 mb1' (compute, stream 0): [EXEC-DATA] buffer 0 does not "
                       "exist; fix the program");

  p = base;
  p.ops[3].bytes = -2;
  CHECK(only(p).find("op 3 'dp_param_gather b0' (all_gather on 'dp', stream 1): [EXEC-SIZE] negative or non-finite "
                     "size") != std::string::npos);

  p = base;
  p.ops[0].gemm = {-128, 128, 128, 1};
  CHECK(only(p).find("op 0 'fc2_dgrad l3 mb1' (compute, stream 0): [EXEC-SIZE] GEMM shape -128 x 128 x 128") !=
        std::string::npos);

  p = base;
  p.ops[0].key.slot = static_cast<op_type>(250);  // named as the slot, not as the op's type
  CHECK(only(p).find("(compute, stream 0): [EXEC-KEY] slot 250 is no op type; fix the program") != std::string::npos);

  p = base;
  p.ops[0].key.at.layer = -7;
  CHECK(only(p).find("[EXEC-KEY] key coordinate l is -7") != std::string::npos);
}

TEST_CASE("every problem is listed: the program's own first, then what the trainer supplied, in issue order") {
  sc::program p = two_rank_program();
  p.ops[2].stream = 7;
  p.ops.push_back({.kind = K::compute, .stream = 0, .key = {.type = op_type::attn_core_bprop, .at = {.layer = 3}}});
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  r.kernels[op_type::attn_core_bprop] = nullptr;
  r.streams = {1};
  CHECK(rejection(p, edit_buffers(r, [](const sc::op&, buffer& b) { b.recv = nullptr; })) ==
        "[EXEC-PREFLIGHT] rank 3: 4 problems before launch, nothing was launched:\n"
        "  rank 3: [EXEC-STREAM] 1 streams were lent for a program with 2; lend one per program stream, in order, "
        "or none\n"
        "  rank 3, op 2 'event_wait' (wait, stream 7): [EXEC-STREAM] stream 7 does not exist; fix the program\n"
        "  rank 3, op 3 'dp_param_gather b0' (all_gather on 'dp', stream 1): [EXEC-BUFFER] the op's recv device "
        "pointer is null; return the op's device memory from resources.buffers: .recv with at least 128 bytes "
        "(.recv_bytes)\n"
        "  rank 3, op 4 'attn_core_bprop l3' (compute, stream 0): [EXEC-KERNEL] no kernel for op type "
        "'attn_core_bprop' (1 op, the first 'attn_core_bprop l3'); add cuda::on<op_type::attn_core_bprop>(...) to "
        "kernels_for, or set resources.kernels[op_type::attn_core_bprop]");
}

TEST_CASE("an empty buffer names its null device pointers and the memory to bind, not a dtype problem") {
  sc::program p = two_rank_program();
  p.ops.push_back({.kind = K::recv,
                   .stream = 1,
                   .key = {.type = op_type::pp_recv_backward, .at = {.micro_batch = 0}},
                   .comm = 0,
                   .peer = 0,
                   .bytes = 32});
  const auto comms = comms_for(p);
  const auto r = edit_buffers(supply(p, comms), [](const sc::op&, buffer& b) { b = buffer{}; });
  // Each op is told the sides it uses: an all-gather both, a receive only its recv side.
  CHECK(rejection(p, r) ==
        "[EXEC-PREFLIGHT] rank 3: 2 problems before launch, nothing was launched:\n"
        "  rank 3, op 3 'dp_param_gather b0' (all_gather on 'dp', stream 1): [EXEC-BUFFER] the buffer provider gave "
        "the op an empty buffer: its send and recv device pointers are null and their sizes 0; return the op's device "
        "memory from resources.buffers: .send with at least 64 bytes (.send_bytes), .recv with at least 128 bytes "
        "(.recv_bytes)\n"
        "  rank 3, op 4 'pp_recv_backward mb0' (recv on 'dp', stream 1): [EXEC-BUFFER] the buffer provider gave the "
        "op an empty buffer: its recv device pointer is null and its size 0; return the op's device memory from "
        "resources.buffers: .recv with at least 32 bytes (.recv_bytes)");
}

TEST_CASE("lending streams: one per program stream or none") {
  const sc::program p = two_rank_program();
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  r.streams = {1};
  CHECK(rejection(p, r).find("[EXEC-STREAM] 1 streams were lent for a program with 2") != std::string::npos);
}
