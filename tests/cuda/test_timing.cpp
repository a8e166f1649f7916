// The executor's timing mode on the recording shim: a timing-event pair around every compute and
// communication op on its stream (around the whole group for an NCCL group), one elapsed-time
// read per pair after the step, the median over steps, events created once and destroyed with
// the executor, and every failing call reported.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "shim_fixture.hpp"

using namespace shim;
using K = sc::op_kind;
namespace cu = overlap::cuda;

namespace {
/// Rank 1 of a data-parallel pair {0, 1} and a pipeline pair {1, 2}: a GEMM, an all-reduce after
/// it on the DP stream, a send/recv group on the PP stream, then a GEMM after the all-reduce.
sc::program timed_program() {
  sc::program p;
  p.rank = 1;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}, {sc::stream_role::pp_send, -2}};
  p.comms = {{"dp", {0, 1}}, {"pp", {1, 2}}};
  p.num_events = 1;
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
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc1_dgrad, .at = {.layer = 0, .micro_batch = 0}}},
  };
  return p;
}

/// The shim's name of an event, and its log lines of a timing event's record on `stream` and of
/// an elapsed-time read. Built by appending: g++ 12 at -O3 takes `"text" + std::string` for an
/// overlapping copy (-Wrestrict).
std::string e(int event) {
  std::string name = "e";
  name += std::to_string(event);
  return name;
}
std::string record(int event, const char* stream) {
  std::string line = "record e";
  line += std::to_string(event);
  line += ' ';
  line += stream;
  return line;
}
std::string elapsed(int start, int end) {
  std::string line = "elapsed e";
  line += std::to_string(start);
  line += " e";
  line += std::to_string(end);
  return line;
}
}  // namespace

TEST_CASE("run_timed records a timing pair around each op on its stream and one around an NCCL group") {
  reset();
  const sc::program p = timed_program();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  s().log.clear();
  // An interval's time follows its start event, so each op's reading says which pair it came from.
  s().elapsed_ms = [](int start, int, int) { return static_cast<float>(start - 200) * 0.25f; };
  const cu::step_timing t = exec.run_timed();

  const std::vector<int>& ev = s().timing_events;
  REQUIRE(ev.size() == 8);  // four intervals: two GEMMs, the all-reduce, the send/recv group
  const std::vector<std::string> expected = {
      record(ev[0], "s100"), "kernel fc1_fprop l0 mb0 s100", record(ev[1], "s100"), "record e200 s100",
      "wait s101 e200", record(ev[2], "s101"), "all_reduce dp s101 @0 -> @4096 count 32", record(ev[3], "s101"),
      record(ev[4], "s102"), "group_start", "send pp s102 @0 count 16 to 1", "recv pp s102 @4096 count 16 from 1",
      "group_end", record(ev[5], "s102"), record(ev[6], "s100"), "kernel fc1_dgrad l0 mb0 s100", record(ev[7], "s100"),
      // read after the step finished
      elapsed(ev[0], ev[1]), elapsed(ev[2], ev[3]), elapsed(ev[4], ev[5]), elapsed(ev[6], ev[7])};
  CHECK(s().log == expected);
  CHECK(s().queries > 0);  // the step was waited for before the reads

  CHECK(t.steps == 1);
  CHECK(t.num_ops == p.ops.size());
  REQUIRE(t.ops.size() == 5);  // the record and the wait take no time of their own
  const auto us_of = [&](int event) { return (event - 200) * 250.0; };
  const std::vector<int> op = {0, 3, 4, 5, 6};
  const std::vector<double> us = {us_of(ev[0]), us_of(ev[2]), us_of(ev[4]), us_of(ev[4]), us_of(ev[6])};
  const std::vector<int> interval_ops = {1, 1, 2, 2, 1};
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    CAPTURE(i);
    const sc::op& o = p.ops[static_cast<std::size_t>(op[i])];
    CHECK(t.ops[i].op == op[i]);
    CHECK(t.ops[i].key == o.key);
    CHECK(t.ops[i].kind == o.kind);
    CHECK(t.ops[i].us == us[i]);
    CHECK(t.ops[i].samples_us == std::vector<double>{us[i]});
    CHECK(t.ops[i].interval_ops == interval_ops[i]);
  }
  CHECK(t.us_per_op() == std::vector<double>{us[0], 0, 0, us[1], us[2], us[3], us[4]});
}

TEST_CASE("run_timed(n) gives each op the median of its n samples") {
  reset();
  const sc::program p = timed_program();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  // Four reads per step; step k scales every interval by its factor.
  const std::vector<float> factor = {3, 1, 7, 2};
  s().elapsed_ms = [&](int start, int, int read) {
    return factor[static_cast<std::size_t>(read / 4)] * static_cast<float>(start - 200);
  };
  const cu::step_timing three = exec.run_timed(3);
  CHECK(three.steps == 3);
  const int first_start = s().timing_events[0];
  const double base = (first_start - 200) * 1000.0;
  CHECK(three.ops[0].samples_us == std::vector<double>{3 * base, 1 * base, 7 * base});
  CHECK(three.ops[0].us == 3 * base);

  s().elapsed_reads = 0;
  const cu::step_timing two = exec.run_timed(2);  // an even count: the mean of the middle two
  CHECK(two.ops[0].us == 2 * base);
}

TEST_CASE("timing events are created once, never issued by run() or capture(), and destroyed with the executor") {
  reset();
  const sc::program p = timed_program();
  const auto comms = comms_for(p);
  {
    executor exec(p, supply(p, comms));
    exec.run_timed();
    exec.run_timed(2);
    CHECK(s().timing_events.size() == 8);  // the second call reuses the first call's pairs
    s().log.clear();
    exec.run();
    for (const std::string& line : s().log)
      for (const int t : s().timing_events) CHECK(line.find(e(t)) == std::string::npos);
    s().log.clear();
    exec.capture();
    for (const std::string& line : s().log)
      for (const int t : s().timing_events) CHECK(line.find(e(t)) == std::string::npos);
  }
  CHECK(s().events_destroyed == 1 + 1 + 2 + 8);  // the program's, fork, joins, timing
}

TEST_CASE("the timing mode reports each failing call with its op, and rejects a count of no steps") {
  const sc::program p = timed_program();
  const auto comms = comms_for(p);
  const auto message_of = [&](const char* call, int nth) {
    reset();
    executor exec(p, supply(p, comms));
    s().fail_call = call;
    s().fail_nth = nth;
    s().fail_status = recording_api::cuda_invalid_handle;
    try {
      exec.run_timed();
    } catch (const cu::call_error& error) {
      return std::string(error.what()) + " [op " + std::to_string(error.op()) + "]";
    }
    return std::string("nothing thrown");
  };
  CHECK(message_of("timing_event_create", 2) ==
        "rank 1, op 3 'dp_grad_reduce b0' (all_reduce on 'dp', stream 1): [EXEC-CUDA] cudaEventCreateWithFlags "
        "(timing) failed: cudaErrorInvalidResourceHandle: invalid resource handle [op 3]");
  CHECK(message_of("event_record", 0) ==
        "rank 1, op 0 'fc1_fprop l0 mb0' (compute, stream 0): [EXEC-CUDA] cudaEventRecord (timing) failed: "
        "cudaErrorInvalidResourceHandle: invalid resource handle [op 0]");
  CHECK(message_of("event_elapsed_ms", 2) ==
        "rank 1, op 4 'pp_send_forward mb0' (send on 'pp', stream 2): [EXEC-CUDA] cudaEventElapsedTime failed: "
        "cudaErrorInvalidResourceHandle: invalid resource handle [op 4]");

  reset();
  executor exec(p, supply(p, comms));
  std::string message;
  try {
    exec.run_timed(0);
  } catch (const cu::usage_error& error) {
    message = error.what();
  }
  CHECK(message == "rank 1: [EXEC-TIMING] run_timed(0) times no step; give steps >= 1");

  // After a failed create, the next run_timed creates its pairs anew and times every op.
  s().fail_call = "timing_event_create";
  s().fail_nth = 3;
  s().fail_status = recording_api::cuda_invalid_handle;
  CHECK_THROWS_AS(exec.run_timed(), cu::call_error);
  s().fail_call.clear();
  const cu::step_timing after = exec.run_timed();
  CHECK(after.ops.size() == 5);
}
