#pragma once
/// @file
/// The watchdog: waits for streams by polling them, never by blocking in the driver, and polls
/// every communicator's asynchronous error on the way. On an asynchronous error, a failed stream
/// or a timeout it aborts every communicator (so that no peer, and no host thread, waits forever)
/// and throws `watchdog_error`. Host only.

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <overlap/cuda/api.hpp>
#include <overlap/cuda/error.hpp>

namespace overlap::cuda {

/// How long a wait may take and how often it looks.
struct watchdog_options {
  std::chrono::nanoseconds timeout = std::chrono::minutes(10);
  std::chrono::nanoseconds poll_interval = std::chrono::microseconds(50);
};

template <executor_api Api>
class basic_watchdog {
 public:
  using stream_t = typename Api::stream_t;
  using comm_t = typename Api::comm_t;

  /// A stream to wait for, with a label for messages.
  struct watched_stream {
    stream_t stream;
    std::string label;
  };
  /// A communicator to poll and, when it fires, abort.
  struct watched_comm {
    comm_t comm;
    std::string name;
  };

  basic_watchdog(int rank, std::vector<watched_stream> streams, std::vector<watched_comm> comms,
                 watchdog_options options)
      : rank_(rank), streams_(std::move(streams)), comms_(std::move(comms)), options_(options) {}

  /// Returns once every stream has finished; throws `watchdog_error` (communicators aborted) on an
  /// asynchronous NCCL error, a failed stream, or when `timeout` passes first.
  void wait_streams(std::chrono::nanoseconds timeout) {
    require_alive(-1);
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      poll_comms(-1);
      std::string running;
      for (const watched_stream& s : streams_) {
        const auto status = Api::stream_query(s.stream);
        if (status == Api::cuda_success) continue;
        if (status == Api::cuda_not_ready) {
          running += (running.empty() ? "" : ", ") + s.label;
          continue;
        }
        abort_all();
        throw watchdog_error("[EXEC-STREAM-FAILED] rank " + std::to_string(rank_) + ": stream " + s.label +
                                 " failed: " + Api::cuda_error_name(status) + ": " + Api::cuda_error_string(status) +
                                 "; every communicator (" + comm_names() +
                                 ") was aborted; run the step under compute-sanitizer "
                                 "to find the kernel",
                             rank_, -1);
      }
      if (running.empty()) return;
      if (std::chrono::steady_clock::now() - start >= timeout)
        timed_out(-1, "streams still running: " + running, timeout);
      std::this_thread::sleep_for(options_.poll_interval);
    }
  }

  /// Returns once `event` (the program's event `index`, waited for by op `op`) has completed its
  /// latest record; throws as `wait_streams` does.
  void wait_event(typename Api::event_t event, int index, int op, std::chrono::nanoseconds timeout) {
    const auto label = [&] { return "event " + std::to_string(index) + " (op " + std::to_string(op) + ")"; };
    require_alive(-1);
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      poll_comms(-1);
      const auto status = Api::event_query(event);
      if (status == Api::cuda_success) return;
      if (status != Api::cuda_not_ready) {
        abort_all();
        throw watchdog_error("[EXEC-STREAM-FAILED] rank " + std::to_string(rank_) + ": the work before " + label() +
                                 " failed: " + Api::cuda_error_name(status) + ": " + Api::cuda_error_string(status) +
                                 "; every communicator (" + comm_names() +
                                 ") was aborted; run the step under "
                                 "compute-sanitizer to find the kernel",
                             rank_, -1);
      }
      if (std::chrono::steady_clock::now() - start >= timeout) timed_out(-1, label() + " has not completed", timeout);
      std::this_thread::sleep_for(options_.poll_interval);
    }
  }

  /// For non-blocking communicators: after a call returned "in progress", returns once no
  /// communicator is still enqueuing (blaming op `op`, described by `what`, if it times out).
  void wait_enqueued(int op, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    while (poll_comms(op)) {
      if (std::chrono::steady_clock::now() - start >= options_.timeout)
        timed_out(op, what + " and its communicators were still enqueuing", options_.timeout);
      std::this_thread::sleep_for(options_.poll_interval);
    }
  }

  /// Aborts every communicator once; returns the failures of the abort calls (empty: none).
  std::string abort_all() {
    if (aborted_) return {};
    aborted_ = true;
    std::string failures;
    for (const watched_comm& c : comms_) {
      const auto status = Api::comm_abort(c.comm);
      if (!(status == Api::nccl_success))
        failures += "; aborting '" + c.name + "' failed too: " + Api::nccl_error_name(status);
    }
    return failures;
  }

  /// True once the communicators were aborted: nothing may be issued on them any more.
  bool aborted() const noexcept { return aborted_; }

  /// Throws `usage_error` once the communicators were aborted.
  void require_alive(int op) const {
    if (aborted_)
      throw usage_error("[EXEC-ABORTED] rank " + std::to_string(rank_) +
                            ": the communicators were aborted after an earlier failure; create new "
                            "communicators and a new executor",
                        rank_, op);
  }

  const watchdog_options& options() const noexcept { return options_; }

 private:
  /// Checks every communicator's asynchronous error; returns whether one is still enqueuing.
  bool poll_comms(int op) {
    bool in_progress = false;
    for (const watched_comm& c : comms_) {
      typename Api::nccl_status_t async = Api::nccl_success;
      const auto status = Api::comm_get_async_error(c.comm, &async);
      if (!(status == Api::nccl_success)) async = status;
      if (async == Api::nccl_success) continue;
      if (async == Api::nccl_in_progress) {
        in_progress = true;
        continue;
      }
      const std::string detail = Api::nccl_last_error(c.comm);
      const std::string abort_failures = abort_all();
      throw watchdog_error("[EXEC-ASYNC] rank " + std::to_string(rank_) + ": NCCL communicator '" + c.name +
                               "' reported " + Api::nccl_error_name(async) + ": " + Api::nccl_error_string(async) +
                               (detail.empty() ? "" : " (" + detail + ")") + "; every communicator (" + comm_names() +
                               ") was aborted" + abort_failures + "; see the NCCL_DEBUG=WARN output of every rank",
                           rank_, op);
    }
    return in_progress;
  }

  [[noreturn]] void timed_out(int op, const std::string& what, std::chrono::nanoseconds timeout) {
    const std::string abort_failures = abort_all();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
    throw watchdog_error("[EXEC-TIMEOUT] rank " + std::to_string(rank_) + ": not finished after " + std::to_string(ms) +
                             " ms (" + what + "); every communicator (" + comm_names() + ") was aborted" +
                             abort_failures +
                             "; a peer probably did not issue its matching op (check the step "
                             "with overlap::verify::verify) or the timeout is too short",
                         rank_, op);
  }

  std::string comm_names() const {
    std::string names;
    for (const watched_comm& c : comms_) names += (names.empty() ? "'" : ", '") + c.name + "'";
    return names.empty() ? "none" : names;
  }

  int rank_;
  std::vector<watched_stream> streams_;
  std::vector<watched_comm> comms_;
  watchdog_options options_;
  bool aborted_ = false;
};

}  // namespace overlap::cuda
