// The executor's dispatch on the recording shim: calls in program order on the program's streams,
// NCCL groups around grouped ops, each wait on its event's handle, all-to-all as grouped p2p,
// CUDA graph capture and replay, and borrowed streams.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include "shim_fixture.hpp"

using namespace shim;
using K = sc::op_kind;

namespace {
/// Rank 1 of a data-parallel pair {0, 1} and a pipeline pair {1, 2}.
sc::program small_program() {
  sc::program p;
  p.rank = 1;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}, {sc::stream_role::pp_send, -2}};
  p.comms = {{"dp", {0, 1}}, {"pp", {1, 2}}};
  p.num_events = 2;
  p.ops = {
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc1_fprop, .at = {.layer = 0, .micro_batch = 0}}},
      {.kind = K::record, .stream = 0, .key = {.type = op_type::event_record}, .event = 0},
      {.kind = K::wait, .stream = 1, .key = {.type = op_type::event_wait}, .event = 0},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::dp_grad_reduce, .at = {.bucket = 0}},
       .coll = sc::collective::all_reduce,
       .comm = 0,
       .bytes = 64},
      {.kind = K::record, .stream = 1, .event = 1},
      {.kind = K::send,
       .stream = 2,
       .key = {.type = op_type::pp_send_forward, .at = {.micro_batch = 0}},
       .comm = 1,
       .peer = 1,
       .bytes = 32,
       .group = 0},
      {.kind = K::recv,
       .stream = 2,
       .key = {.type = op_type::pp_recv_backward, .at = {.micro_batch = 0}},
       .comm = 1,
       .peer = 1,
       .bytes = 32,
       .group = 0},
      {.kind = K::wait, .stream = 0, .event = 1},
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc1_dgrad, .at = {.layer = 0, .micro_batch = 0}}},
  };
  return p;
}

const std::vector<std::string> small_step = {
    "kernel fc1_fprop l0 mb0 s100",
    "record e200 s100",
    "wait s101 e200",
    "all_reduce dp s101 @0 -> @4096 count 32",
    "record e201 s101",
    "group_start",
    "send pp s102 @0 count 16 to 1",
    "recv pp s102 @4096 count 16 from 1",
    "group_end",
    "wait s100 e201",
    "kernel fc1_dgrad l0 mb0 s100",
};
}  // namespace

TEST_CASE("run issues every op in program order on its stream, grouped ops inside one NCCL group") {
  reset();
  const sc::program p = small_program();
  const auto comms = comms_for(p);
  {
    executor exec(p, supply(p, comms));
    std::vector<std::string> expected = {"stream_create s100 priority 0", "stream_create s101 priority -1",
                                         "stream_create s102 priority -2"};
    CHECK(s().log == expected);  // construction creates the streams with the program's priorities
    s().log.clear();
    exec.run();
    CHECK(s().log == small_step);
    CHECK(exec.calls_per_step() == small_step.size() + 2);  // + the two kernel launch checks
    s().log.clear();
    exec.run();  // a second step issues the same calls again
    CHECK(s().log == small_step);
  }
  CHECK(s().streams_destroyed == 3);
  CHECK(s().events_destroyed == 2 + 1 + 2);  // the program's, the graph fork, the graph joins
}

TEST_CASE("the executor creates the events its ops use, not one per declared id") {
  // num_events is only a bound: a program may declare INT_MAX of them (a CUDA event per id would
  // exhaust the device). Its used ids get their handles in id order.
  reset();
  sc::program p = small_program();
  p.num_events = std::numeric_limits<int>::max();
  p.ops[4].event = p.ops[7].event = p.num_events - 1;  // the pipeline record and its wait
  const auto comms = comms_for(p);
  {
    executor exec(p, supply(p, comms));
    CHECK(s().next_event == 2 + 1 + 2);  // events 0 and INT_MAX - 1, the graph fork, the graph joins
    s().log.clear();
    exec.run();
    CHECK(s().log == small_step);
  }
  CHECK(s().events_destroyed == 2 + 1 + 2);
}

TEST_CASE("a wait uses the handle of its event, so it follows that event's latest record") {
  reset();
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::tp_comm, 0}};
  p.num_events = 3;
  p.ops = {
      {.kind = K::record, .stream = 0, .event = 2},
      {.kind = K::record, .stream = 0, .event = 0},
      {.kind = K::wait, .stream = 1, .event = 0},
      {.kind = K::record, .stream = 1, .event = 0},  // re-recorded on the other stream
      {.kind = K::wait, .stream = 0, .event = 0},
      {.kind = K::wait, .stream = 1, .event = 2},
  };
  executor exec(p, {});
  s().log.clear();
  exec.run();
  // Event 1 is unused: it gets no handle, and event 2 the second one.
  const std::vector<std::string> expected = {"record e201 s100", "record e200 s100", "wait s101 e200",
                                             "record e200 s101", "wait s100 e200",   "wait s101 e201"};
  CHECK(s().log == expected);
}

TEST_CASE("an all-to-all is n sends and n receives of bytes / n, as one group unless already in one") {
  reset();
  sc::program p;
  p.rank = 6;
  p.streams = {{sc::stream_role::ep_comm, 0}};
  p.comms = {{"ep", {4, 5, 6, 7}}};
  p.ops = {
      {.kind = K::collective,
       .stream = 0,
       .key = {.type = op_type::ep_dispatch, .at = {.layer = 1}},
       .coll = sc::collective::all_to_all,
       .comm = 0,
       .bytes = 64},
      {.kind = K::collective,
       .stream = 0,
       .key = {.type = op_type::ep_combine, .at = {.layer = 1}},
       .coll = sc::collective::all_to_all,
       .comm = 0,
       .bytes = 32,
       .group = 3},
      {.kind = K::send, .stream = 0, .comm = 0, .peer = 3, .bytes = 8, .group = 3},  // untyped
  };
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  s().log.clear();
  exec.run();
  const std::vector<std::string> expected = {
      "group_start",
      "send ep s100 @0 count 8 to 0",
      "recv ep s100 @4096 count 8 from 0",
      "send ep s100 @16 count 8 to 1",
      "recv ep s100 @4112 count 8 from 1",
      "send ep s100 @32 count 8 to 2",
      "recv ep s100 @4128 count 8 from 2",
      "send ep s100 @48 count 8 to 3",
      "recv ep s100 @4144 count 8 from 3",
      "group_end",
      "group_start",
      "send ep s100 @0 count 4 to 0",
      "recv ep s100 @4096 count 4 from 0",
      "send ep s100 @8 count 4 to 1",
      "recv ep s100 @4104 count 4 from 1",
      "send ep s100 @16 count 4 to 2",
      "recv ep s100 @4112 count 4 from 2",
      "send ep s100 @24 count 4 to 3",
      "recv ep s100 @4120 count 4 from 3",
      "send ep s100 @0 count 4 to 3",
      "group_end",
  };
  CHECK(s().log == expected);
}

TEST_CASE("all-gather and reduce-scatter counts are per rank: the input part and the output part") {
  reset();
  sc::program p;
  p.rank = 0;
  p.streams = {{sc::stream_role::tp_comm, 0}};
  p.comms = {{"tp", {0, 1, 2, 3}}};
  p.ops = {
      {.kind = K::collective,
       .stream = 0,
       .key = {.type = op_type::tp_all_gather, .slot = op_type::fc1_fprop},
       .coll = sc::collective::all_gather,
       .comm = 0,
       .bytes = 64},
      {.kind = K::collective,
       .stream = 0,
       .key = {.type = op_type::tp_reduce_scatter, .slot = op_type::fc2_fprop},
       .coll = sc::collective::reduce_scatter,
       .comm = 0,
       .bytes = 64},
  };
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  s().log.clear();
  exec.run();
  const std::vector<std::string> expected = {"all_gather tp s100 @0 -> @4096 count 8",
                                             "reduce_scatter tp s100 @0 -> @4096 count 8"};
  CHECK(s().log == expected);
}

TEST_CASE("capture forks every stream from stream 0, issues the step, joins them back, replay launches it") {
  reset();
  const sc::program p = small_program();
  const auto comms = comms_for(p);
  {
    executor exec(p, supply(p, comms));
    s().log.clear();
    CHECK_FALSE(exec.captured());
    CHECK_THROWS_AS(exec.replay(), overlap::cuda::usage_error);
    exec.capture();
    CHECK(exec.captured());
    std::vector<std::string> expected = {"begin_capture s100", "record e202 s100", "wait s101 e202", "wait s102 e202"};
    expected.insert(expected.end(), small_step.begin(), small_step.end());
    for (const char* line : {"record e203 s101", "wait s100 e203", "record e204 s102", "wait s100 e204",
                             "end_capture s100", "instantiate g300"})
      expected.push_back(line);
    CHECK(s().log == expected);
    CHECK(s().graphs_destroyed == 1);  // the graph is freed once instantiated
    s().log.clear();
    exec.replay();
    exec.replay();
    CHECK(s().log == std::vector<std::string>{"launch x400 s100", "launch x400 s100"});
  }
  CHECK(s().execs_destroyed == 1);
}

TEST_CASE("a failure during capture ends the capture and reports the op") {
  reset();
  const sc::program p = small_program();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  s().fail_call = "all_reduce";
  s().fail_status = recording_api::nccl_invalid_usage;
  CHECK_THROWS_WITH_AS(exec.capture(), doctest::Contains("op 3 'dp_grad_reduce b0'"), overlap::cuda::call_error);
  CHECK(s().log.back() == "end_capture s100");
  CHECK_FALSE(exec.captured());
}

TEST_CASE("a program with a host sync cannot be captured, and its run waits through the watchdog") {
  reset();
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}};
  p.ops = {{.kind = K::compute, .stream = 0, .key = {.type = op_type::lm_head_fprop}},
           {.kind = K::host_sync, .key = {.type = op_type::host_sync}},
           {.kind = K::compute, .stream = 0, .key = {.type = op_type::optimizer_step}}};
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  CHECK_THROWS_WITH_AS(exec.capture(), doctest::Contains("op 1 'host_sync' (host_sync)"), overlap::cuda::usage_error);
  s().log.clear();
  exec.run();
  CHECK(s().queries == 1);
  CHECK(s().log == std::vector<std::string>{"kernel lm_head_fprop s100", "kernel optimizer_step s100"});
}

TEST_CASE("a host sync on an event polls that event, not the streams") {
  reset();
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}};
  p.num_events = 1;
  p.ops = {{.kind = K::compute, .stream = 0, .key = {.type = op_type::router_fprop}},
           {.kind = K::record, .stream = 0, .key = {.type = op_type::event_record}, .event = 0},
           {.kind = K::host_sync, .key = {.type = op_type::moe_token_count_sync}, .event = 0},
           {.kind = K::compute, .stream = 0, .key = {.type = op_type::permute_fprop}}};
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  CHECK_THROWS_AS(exec.capture(), overlap::cuda::usage_error);
  s().log.clear();
  exec.run();
  CHECK(s().queries == 1);
  CHECK(s().log == std::vector<std::string>{"kernel router_fprop s100", "record e200 s100", "host_wait e200",
                                            "kernel permute_fprop s100"});
}

TEST_CASE("lent streams are used as they are and not destroyed") {
  reset();
  const sc::program p = small_program();
  const auto comms = comms_for(p);
  {
    auto r = supply(p, comms);
    r.streams = {7, 8, 9};
    executor exec(p, std::move(r));
    CHECK(exec.stream(2) == 9);
    CHECK(lines_starting("stream_create").empty());
    s().log.clear();
    exec.run();
    CHECK(s().log[0] == "kernel fc1_fprop l0 mb0 s7");
    CHECK(s().log[2] == "wait s8 e200");
    CHECK(s().log[6] == "send pp s9 @0 count 16 to 1");
  }
  CHECK(s().streams_destroyed == 0);
}
