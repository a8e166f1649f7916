#pragma once
// A CUDA/NCCL stand-in for the executor's tests: every call is appended to a log as one line,
// handles are small integers, and a test can make a call fail, keep a stream busy, or give a
// communicator an asynchronous error. Timing events read back what `state::elapsed_ms` says.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <overlap/cuda/api.hpp>

namespace shim {

/// A communicator of the shim: its size, this process's rank in it, and its asynchronous state.
struct comm_state {
  std::string name;
  int count = 1;
  int rank = 0;
  int async = 0;              ///< what ncclCommGetAsyncError reports
  int in_progress_polls = 0;  ///< report ncclInProgress this many more times first
  int aborts = 0;
};

/// Element types: the value is the element size (0: a type of unknown size).
enum class dtype : std::uint8_t { unknown = 0, bf16 = 2, fp32 = 4 };

/// Device memory stand-in: buffers point into it, and the log prints offsets from `state::base`.
inline char arena[1 << 20];

struct state {
  std::vector<std::string> log;
  int next_stream = 0, next_event = 0;
  int streams_destroyed = 0, events_destroyed = 0, graphs_destroyed = 0, execs_destroyed = 0;
  std::string fail_call;  ///< the call that fails ("" none), on its `fail_nth` occurrence (0-based)
  int fail_nth = 0;
  int fail_status = 0;
  int seen_fail_call = 0;
  int nccl_return = 0;        ///< what every NCCL enqueue returns when no failure is due (7: in progress)
  bool streams_busy = false;  ///< cudaStreamQuery reports cudaErrorNotReady
  int stream_error = 0;       ///< cudaStreamQuery reports this error (0: none)
  int queries = 0;
  const char* base = arena;        ///< where the log's buffer offsets count from
  std::vector<int> timing_events;  ///< created with timing on, in creation order
  /// What cudaEventElapsedTime reads between two timing events; `read` counts the reads (0-based).
  std::function<float(int start, int end, int read)> elapsed_ms = [](int, int, int) { return 1.0f; };
  int elapsed_reads = 0;
};

inline state& s() {
  static state st;
  return st;
}
inline void reset() { s() = state{}; }

struct recording_api {
  using stream_t = int;
  using event_t = int;
  using comm_t = comm_state*;
  using dtype_t = shim::dtype;
  using graph_t = int;
  using graph_exec_t = int;
  using cuda_status_t = int;
  using nccl_status_t = int;

  static constexpr int cuda_success = 0;
  static constexpr int cuda_not_ready = 600;
  static constexpr int cuda_invalid_handle = 400;
  static constexpr int cuda_launch_failure = 719;
  static constexpr int nccl_success = 0;
  static constexpr int nccl_invalid_usage = 5;
  static constexpr int nccl_remote_error = 6;
  static constexpr int nccl_in_progress = 7;

  static int fails(const char* call) {
    if (s().fail_call != call) return 0;
    return s().seen_fail_call++ == s().fail_nth ? s().fail_status : 0;
  }
  static int cuda(const std::string& line, const char* call) {
    s().log.push_back(line);
    return fails(call);
  }
  static int nccl(const std::string& line, const char* call) {
    s().log.push_back(line);
    const int f = fails(call);
    return f != 0 ? f : s().nccl_return;
  }
  static std::string at(const void* p) {
    if (p == nullptr) return "null";
    return "@" + std::to_string(reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(s().base));
  }
  static std::string id(int v) { return std::to_string(v); }
  static std::string of(comm_t c) { return c->name; }

  static int stream_create(int* out, int priority) {
    *out = 100 + s().next_stream++;
    return cuda("stream_create s" + id(*out) + " priority " + id(priority), "stream_create");
  }
  static int stream_destroy(int) { return ++s().streams_destroyed, 0; }
  static int stream_query(int) {
    ++s().queries;
    if (s().stream_error != 0) return s().stream_error;
    return s().streams_busy ? cuda_not_ready : cuda_success;
  }
  static int event_create(int* out) {
    *out = 200 + s().next_event++;
    return fails("event_create");
  }
  static int timing_event_create(int* out) {
    *out = 200 + s().next_event++;
    s().timing_events.push_back(*out);
    return fails("timing_event_create");
  }
  static int event_elapsed_ms(float* ms, int start, int end) {
    *ms = s().elapsed_ms(start, end, s().elapsed_reads++);
    return cuda("elapsed e" + id(start) + " e" + id(end), "event_elapsed_ms");
  }
  static int event_destroy(int) { return ++s().events_destroyed, 0; }
  static int event_record(int e, int st) { return cuda("record e" + id(e) + " s" + id(st), "event_record"); }
  static int stream_wait_event(int st, int e) { return cuda("wait s" + id(st) + " e" + id(e), "stream_wait_event"); }
  static int event_query(int e) {
    ++s().queries;
    if (s().stream_error != 0) return s().stream_error;
    if (s().streams_busy) return cuda_not_ready;
    return cuda("host_wait e" + id(e), "event_query");
  }
  static int get_last_error() { return fails("get_last_error"); }
  static int begin_capture(int st) { return cuda("begin_capture s" + id(st), "begin_capture"); }
  static int end_capture(int st, int* g) {
    *g = 300;
    return cuda("end_capture s" + id(st), "end_capture");
  }
  static int graph_instantiate(int* exec, int g) {
    *exec = 400;
    return cuda("instantiate g" + id(g), "graph_instantiate");
  }
  static int graph_launch(int exec, int st) { return cuda("launch x" + id(exec) + " s" + id(st), "graph_launch"); }
  static int graph_destroy(int) { return ++s().graphs_destroyed, 0; }
  static int graph_exec_destroy(int) { return ++s().execs_destroyed, 0; }
  static const char* cuda_error_name(int e) {
    switch (e) {
      case 0: return "cudaSuccess";
      case 400: return "cudaErrorInvalidResourceHandle";
      case 600: return "cudaErrorNotReady";
      case 719: return "cudaErrorLaunchFailure";
      default: return "cudaErrorUnknown";
    }
  }
  static const char* cuda_error_string(int e) {
    switch (e) {
      case 400: return "invalid resource handle";
      case 719: return "unspecified launch failure";
      default: return "some CUDA error";
    }
  }

  static int group_start() { return nccl("group_start", "group_start"); }
  static int group_end() { return nccl("group_end", "group_end"); }
  static int all_gather(const void* in, void* out, std::size_t n, dtype, comm_t c, int st) {
    return nccl("all_gather " + of(c) + " s" + id(st) + " " + at(in) + " -> " + at(out) + " count " + std::to_string(n),
                "all_gather");
  }
  static int reduce_scatter(const void* in, void* out, std::size_t n, dtype, comm_t c, int st) {
    return nccl(
        "reduce_scatter " + of(c) + " s" + id(st) + " " + at(in) + " -> " + at(out) + " count " + std::to_string(n),
        "reduce_scatter");
  }
  static int all_reduce(const void* in, void* out, std::size_t n, dtype, comm_t c, int st) {
    return nccl("all_reduce " + of(c) + " s" + id(st) + " " + at(in) + " -> " + at(out) + " count " + std::to_string(n),
                "all_reduce");
  }
  static int send(const void* in, std::size_t n, dtype, int peer, comm_t c, int st) {
    return nccl("send " + of(c) + " s" + id(st) + " " + at(in) + " count " + std::to_string(n) + " to " + id(peer),
                "send");
  }
  static int recv(void* out, std::size_t n, dtype, int peer, comm_t c, int st) {
    return nccl("recv " + of(c) + " s" + id(st) + " " + at(out) + " count " + std::to_string(n) + " from " + id(peer),
                "recv");
  }
  static int comm_count(comm_t c, int* n) { return *n = c->count, fails("comm_count"); }
  static int comm_user_rank(comm_t c, int* r) { return *r = c->rank, fails("comm_user_rank"); }
  static int comm_get_async_error(comm_t c, int* e) {
    if (c->in_progress_polls > 0) {
      --c->in_progress_polls;
      *e = nccl_in_progress;
    } else {
      *e = c->async;
    }
    return 0;
  }
  static int comm_abort(comm_t c) {
    ++c->aborts;
    s().log.push_back("abort " + c->name);
    return 0;
  }
  static const char* nccl_error_name(int e) {
    switch (e) {
      case 0: return "ncclSuccess";
      case 5: return "ncclInvalidUsage";
      case 6: return "ncclRemoteError";
      case 7: return "ncclInProgress";
      default: return "ncclInternalError";
    }
  }
  static const char* nccl_error_string(int e) {
    switch (e) {
      case 5: return "invalid usage";
      case 6: return "remote process exited or there was a network error";
      default: return "some NCCL error";
    }
  }
  static const char* nccl_last_error(comm_t) { return "peer 3 went away"; }
  static std::size_t element_size(dtype t) { return static_cast<std::size_t>(t); }
};

static_assert(overlap::cuda::executor_api<recording_api>);

}  // namespace shim
