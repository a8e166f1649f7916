// Failing calls and the watchdog: a failed CUDA or NCCL call names the op, the rank, the call and
// the error's name and string; a step that does not finish, a failed stream, or an asynchronous
// NCCL error aborts every communicator and throws instead of hanging.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "shim_fixture.hpp"

using namespace shim;
using K = sc::op_kind;
using namespace std::chrono_literals;

namespace {
sc::program program_with_two_comms() {
  sc::program p;
  p.rank = 0;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::tp_comm, -1}};
  p.comms = {{"tp", {0, 1}}, {"dp", {0, 4}}};
  p.num_events = 1;
  p.ops = {
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::proj_fprop, .at = {.layer = 0, .micro_batch = 0}}},
      {.kind = K::record, .stream = 0, .event = 0},
      {.kind = K::wait, .stream = 1, .event = 0},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::tp_reduce_scatter, .slot = op_type::proj_fprop, .at = {.layer = 0, .micro_batch = 0}},
       .coll = sc::collective::reduce_scatter,
       .comm = 0,
       .bytes = 64},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::dp_grad_reduce, .at = {.bucket = 0}},
       .coll = sc::collective::all_reduce,
       .comm = 1,
       .bytes = 64},
  };
  return p;
}

const overlap::cuda::watchdog_options fast{.timeout = 20ms, .poll_interval = 100us};
}  // namespace

TEST_CASE("a failed NCCL call reports op, rank, call, error name and string, and NCCL's last error") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  s().fail_call = "reduce_scatter";
  s().fail_status = recording_api::nccl_invalid_usage;
  try {
    exec.run();
    FAIL("run() did not throw");
  } catch (const overlap::cuda::call_error& e) {
    CHECK(std::string(e.what()) ==
          "rank 0, op 3 'tp_reduce_scatter proj_fprop l0 mb0' (reduce_scatter on 'tp', stream 1): [EXEC-NCCL] "
          "ncclReduceScatter failed: "
          "ncclInvalidUsage: invalid usage (peer 3 went away)");
    CHECK(e.op() == 3);
  }
  CHECK(lines_starting("all_reduce").empty());  // nothing after the failed op is issued
}

TEST_CASE("a failed CUDA call and a failed kernel launch name their op") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  s().fail_call = "stream_wait_event";
  s().fail_status = recording_api::cuda_invalid_handle;
  CHECK_THROWS_WITH_AS(exec.run(),
                       "rank 0, op 2 'wait' (wait, stream 1): [EXEC-CUDA] cudaStreamWaitEvent failed: "
                       "cudaErrorInvalidResourceHandle: invalid resource handle",
                       overlap::cuda::call_error);
  reset();
  s().fail_call = "get_last_error";
  s().fail_status = recording_api::cuda_launch_failure;
  CHECK_THROWS_WITH_AS(exec.run(),
                       "rank 0, op 0 'proj_fprop l0 mb0' (compute, stream 0): [EXEC-CUDA] kernel launch failed: "
                       "cudaErrorLaunchFailure: unspecified launch failure",
                       overlap::cuda::call_error);
}

TEST_CASE("a failed group end names the group's first op") {
  reset();
  sc::program p = program_with_two_comms();
  p.ops[3].group = 0;
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms));
  s().fail_call = "group_end";
  s().fail_status = recording_api::nccl_remote_error;
  CHECK_THROWS_WITH_AS(exec.run(),
                       doctest::Contains("op 3 'tp_reduce_scatter proj_fprop l0 mb0' (reduce_scatter on 'tp', stream "
                                         "1): [EXEC-NCCL] ncclGroupEnd failed: ncclRemoteError"),
                       overlap::cuda::call_error);
}

TEST_CASE("a failure while creating streams releases what was created") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  s().fail_call = "stream_create";
  s().fail_nth = 1;
  s().fail_status = recording_api::cuda_invalid_handle;
  CHECK_THROWS_WITH_AS(executor(p, supply(p, comms)), doctest::Contains("cudaStreamCreateWithPriority failed"),
                       overlap::cuda::call_error);
  CHECK(s().streams_destroyed == 1);  // the first stream, created before the second failed
}

TEST_CASE("the watchdog: a step that does not finish times out, aborts every communicator, then refuses") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms), fast);
  exec.run();
  s().streams_busy = true;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(exec.wait(),
                       doctest::Contains("[EXEC-TIMEOUT] rank 0: not finished after 20 ms (streams "
                                         "still running: 0 (compute), 1 (tp_comm)); every "
                                         "communicator ('tp', 'dp') was aborted"),
                       overlap::cuda::watchdog_error);
  CHECK(std::chrono::steady_clock::now() - start >= 20ms);
  CHECK(comms.at("tp")->aborts == 1);
  CHECK(comms.at("dp")->aborts == 1);
  CHECK(s().queries > 2);  // it polled
  CHECK_THROWS_WITH_AS(exec.run(), doctest::Contains("[EXEC-ABORTED]"), overlap::cuda::usage_error);
  CHECK_THROWS_AS(exec.wait(), overlap::cuda::usage_error);
  CHECK(comms.at("tp")->aborts == 1);  // aborted once
}

TEST_CASE("the watchdog: an asynchronous NCCL error aborts every communicator and says which one failed") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms), fast);
  exec.run();
  s().streams_busy = true;
  comms.at("dp")->async = recording_api::nccl_remote_error;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(exec.wait(10s),
                       doctest::Contains("[EXEC-ASYNC] rank 0: NCCL communicator 'dp' reported ncclRemoteError: "
                                         "remote process exited or there was a network error (peer 3 went away); "
                                         "every communicator ('tp', 'dp') was aborted"),
                       overlap::cuda::watchdog_error);
  CHECK(std::chrono::steady_clock::now() - start < 5s);  // at once, not at the timeout
  CHECK(comms.at("tp")->aborts == 1);
  CHECK(comms.at("dp")->aborts == 1);
}

TEST_CASE("the watchdog: a failed stream aborts the communicators and reports the CUDA error") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms), fast);
  s().stream_error = recording_api::cuda_launch_failure;
  CHECK_THROWS_WITH_AS(exec.wait(), doctest::Contains("stream 0 (compute) failed: cudaErrorLaunchFailure"),
                       overlap::cuda::watchdog_error);
  CHECK(comms.at("tp")->aborts == 1);
}

TEST_CASE("the watchdog returns once every stream is done, without aborting") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms), fast);
  exec.run();
  CHECK_NOTHROW(exec.wait());
  CHECK(comms.at("tp")->aborts == 0);
  CHECK_NOTHROW(exec.run());
}

TEST_CASE("non-blocking communicators: an in-progress call waits until enqueued, then the step goes on") {
  reset();
  const sc::program p = program_with_two_comms();
  const auto comms = comms_for(p);
  executor exec(p, supply(p, comms), fast);
  s().nccl_return = recording_api::nccl_in_progress;
  comms.at("tp")->in_progress_polls = 3;
  exec.run();
  CHECK(comms.at("tp")->in_progress_polls == 0);
  CHECK(lines_starting("all_reduce").size() == 1);
  // One that never finishes enqueuing times out like a hung step.
  comms.at("dp")->in_progress_polls = 1 << 30;
  CHECK_THROWS_WITH_AS(exec.run(), doctest::Contains("op 3 'tp_reduce_scatter proj_fprop l0 mb0'"),
                       overlap::cuda::watchdog_error);
  CHECK(comms.at("dp")->aborts == 1);
}
