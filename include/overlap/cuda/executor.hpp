#pragma once
/// @file
/// `basic_executor<Api>`: runs one rank's step program on CUDA streams with the trainer's NCCL
/// communicators, kernels and buffers. `<overlap/cuda.hpp>` names the real one `executor`; this
/// header is host only, so the dispatch is built and tested without the toolkit.
///
/// The constructor is the pre-flight: it reads the program's structure through
/// `schedule::structure_problems` (the one reading every backend shares) and checks it against
/// what the trainer supplied (a kernel for every compute op type, every communicator with its
/// size and this rank's position, every communication op's buffer from the provider, sized for
/// the op), and throws one `preflight_error` listing every problem before anything is created or
/// launched. It then compiles the program into a flat list of calls with every handle, buffer and
/// count resolved, so `run()` is one loop over it:
///
/// - compute: the kernel of the op's type with the op's key on the op's stream, then the launch
///   status (`cudaGetLastError`);
/// - communication of an overridden type: the trainer's callable with the op, then the launch
///   status; every other one is an NCCL call on the provider's buffer;
/// - record / wait: `cudaEventRecord` / `cudaStreamWaitEvent` on the program's event (a wait
///   follows the latest record issued before it, as the program model says);
/// - ops of one group (`schedule::rank_order`'s range) between `ncclGroupStart` and `ncclGroupEnd`; an all-to-all is
/// its own group
///   of n sends and n receives of bytes / n (inside the op's group when it has one);
/// - host_sync: the watchdog's wait for every stream, or for its event (`cudaEventQuery` polled
///   under the watchdog's timeout: an event synchronize that cannot hang forever).
///
/// Every status is checked; a failure throws `call_error` with the op, the rank, the call and the
/// error's name and string.
///
/// The timing mode (`run_timed`) issues the same calls from a second list that also records a
/// pair of timing events around each timed interval on its stream: every compute op, every
/// communication op outside an NCCL group (an all-to-all with its sends and receives), and each
/// NCCL group as a whole (group members share one stream, and NCCL launches their work together at
/// `ncclGroupEnd`, so a record between them would not bound any one of them). The pairs are
/// created with timing on at the first `run_timed` and kept until the executor goes; `run()` and
/// `capture()` never issue them.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <overlap/cuda/api.hpp>
#include <overlap/cuda/error.hpp>
#include <overlap/cuda/resources.hpp>
#include <overlap/cuda/timing.hpp>
#include <overlap/cuda/watchdog.hpp>
#include <overlap/program/program.hpp>
#include <overlap/program/semantics.hpp>

namespace overlap::cuda {

template <executor_api Api>
class basic_executor {
 public:
  using api = Api;
  using stream_t = typename Api::stream_t;
  using event_t = typename Api::event_t;
  using comm_t = typename Api::comm_t;
  using dtype_t = typename Api::dtype_t;
  using resources = basic_resources<Api>;
  using buffer = basic_buffer<Api>;
  using kernel = typename resources::kernel;
  using comm_override = typename resources::comm_override;

  /// Pre-flight, then creates the streams the trainer did not lend and the program's events.
  /// Throws `preflight_error` (nothing created) or `call_error`.
  basic_executor(schedule::program program, resources supplied, watchdog_options options = {})
      : program_(std::move(program)), resources_(std::move(supplied)), watchdog_(program_.rank, {}, {}, options) {
    preflight();
    try {
      create_streams_and_events();
    } catch (...) {
      release();
      throw;
    }
    std::vector<typename basic_watchdog<Api>::watched_stream> watched_streams;
    for (std::size_t i = 0; i < streams_.size(); ++i)
      watched_streams.push_back({streams_[i], stream_label(static_cast<int>(i))});
    std::vector<typename basic_watchdog<Api>::watched_comm> watched_comms;
    for (const auto& [name, comm] : used_comms_) watched_comms.push_back({comm, name});
    watchdog_ = basic_watchdog<Api>(program_.rank, std::move(watched_streams), std::move(watched_comms), options);
    compile();
  }

  basic_executor(const basic_executor&) = delete;
  basic_executor& operator=(const basic_executor&) = delete;
  ~basic_executor() { release(); }

  /// Issues one step. Returns once it is issued (after the last host_sync, if the program has
  /// any); `wait()` waits for it.
  void run() {
    watchdog_.require_alive(-1);
    issue(calls_);
  }

  /// Times `steps` steps: issues each with timing events around every compute and communication
  /// op (an NCCL group's ops: around the whole group), waits for it under the watchdog, reads the
  /// intervals (`cudaEventElapsedTime`) and returns each op's median over the steps with every
  /// sample. Each step is waited for before the next is issued, so no step's tail overlaps the
  /// next one's head; the median keeps a first step that pays one-time set-up (cuBLAS handles,
  /// NCCL connections) from skewing the result. Event resolution is about half a microsecond.
  /// Throws `usage_error` for `steps` < 1, and `call_error` or `watchdog_error` as `run()` and
  /// `wait()` do.
  step_timing run_timed(int steps = 1) {
    watchdog_.require_alive(-1);
    if (steps < 1)
      throw usage_error(
          where(-1) + ": [EXEC-TIMING] run_timed(" + std::to_string(steps) + ") times no step; give steps >= 1",
          program_.rank, -1);
    prepare_timing();
    std::vector<std::vector<double>> samples(intervals_.size());
    for (int i = 0; i < steps; ++i) {
      issue(timed_calls_);
      wait();
      for (std::size_t u = 0; u < intervals_.size(); ++u) {
        float ms = 0;
        check_cuda(Api::event_elapsed_ms(&ms, intervals_[u].start, intervals_[u].end), intervals_[u].ops.front(),
                   "cudaEventElapsedTime");
        samples[u].push_back(static_cast<double>(ms) * 1000.0);
      }
    }
    step_timing result{.steps = steps, .num_ops = program_.ops.size()};
    for (std::size_t u = 0; u < intervals_.size(); ++u) {
      const double us = detail::median(samples[u]);
      for (const int op : intervals_[u].ops) {
        const schedule::op& o = program_.ops[static_cast<std::size_t>(op)];
        result.ops.push_back({.op = op,
                              .key = o.key,
                              .kind = o.kind,
                              .us = us,
                              .samples_us = samples[u],
                              .interval_ops = static_cast<int>(intervals_[u].ops.size())});
      }
    }
    return result;
  }

  /// Waits for every stream under the watchdog (timeout from the options).
  void wait() { watchdog_.wait_streams(watchdog_.options().timeout); }
  /// Waits for every stream under the watchdog with this timeout.
  void wait(std::chrono::nanoseconds timeout) { watchdog_.wait_streams(timeout); }

  /// Captures one step into a CUDA graph: capture begins on stream 0 (relaxed mode), the other
  /// streams fork from it through an event, the step is issued, they join back, the graph is
  /// instantiated. Replaces an earlier capture. A program with a host sync cannot be captured.
  void capture() {
    watchdog_.require_alive(-1);
    for (std::size_t i = 0; i < program_.ops.size(); ++i)
      if (program_.ops[i].kind == schedule::op_kind::host_sync)
        throw usage_error(where(static_cast<int>(i)) +
                              ": [EXEC-GRAPH] a host sync cannot be captured in a CUDA graph; run "
                              "this program with run(), or generate it without host syncs",
                          program_.rank, static_cast<int>(i));
    drop_graph();
    const stream_t origin = streams_[0];
    check_cuda(Api::begin_capture(origin), -1, "cudaStreamBeginCapture");
    try {
      check_cuda(Api::event_record(fork_, origin), -1, "cudaEventRecord (fork)");
      for (std::size_t i = 1; i < streams_.size(); ++i)
        check_cuda(Api::stream_wait_event(streams_[i], fork_), -1, "cudaStreamWaitEvent (fork)");
      issue(calls_);
      for (std::size_t i = 1; i < streams_.size(); ++i) {
        check_cuda(Api::event_record(joins_[i], streams_[i]), -1, "cudaEventRecord (join)");
        check_cuda(Api::stream_wait_event(origin, joins_[i]), -1, "cudaStreamWaitEvent (join)");
      }
    } catch (...) {
      typename Api::graph_t broken{};
      if (Api::end_capture(origin, &broken) == Api::cuda_success) Api::graph_destroy(broken);
      throw;
    }
    typename Api::graph_t graph{};
    check_cuda(Api::end_capture(origin, &graph), -1, "cudaStreamEndCapture");
    const auto instantiated = Api::graph_instantiate(&graph_exec_, graph);
    Api::graph_destroy(graph);
    check_cuda(instantiated, -1, "cudaGraphInstantiate");
    captured_ = true;
  }

  /// Launches the captured step on stream 0 (the other streams take part through the graph).
  void replay() {
    watchdog_.require_alive(-1);
    if (!captured_)
      throw usage_error(where(-1) + ": [EXEC-GRAPH] replay() before capture(); capture a step first", program_.rank,
                        -1);
    check_cuda(Api::graph_launch(graph_exec_, streams_[0]), -1, "cudaGraphLaunch");
  }

  bool captured() const noexcept { return captured_; }
  const schedule::program& program() const noexcept { return program_; }
  /// The CUDA stream of `program().streams[index]` (created or borrowed).
  stream_t stream(int index) const { return streams_.at(static_cast<std::size_t>(index)); }
  /// The number of calls `run()` makes through `Api` (kernels and launch checks included).
  std::size_t calls_per_step() const noexcept { return calls_per_step_; }

 private:
  enum class step : std::uint8_t {
    compute,
    custom,
    record,
    wait,
    group_start,
    group_end,
    all_gather,
    reduce_scatter,
    all_reduce,
    send,
    recv,
    host_sync,
    host_wait,
    timing_record
  };

  /// One call with everything resolved; `source` is the program op it comes from.
  struct resolved {
    step kind = step::compute;
    int source = -1;
    const schedule::op* op = nullptr;
    stream_t stream{};
    const kernel* fn = nullptr;
    const comm_override* custom = nullptr;
    event_t event{};
    comm_t comm{};
    const void* send = nullptr;
    void* recv = nullptr;
    std::size_t count = 0;
    dtype_t dtype{};
    int peer = -1;
  };

  void issue(const std::vector<resolved>& calls) {
    for (const resolved& r : calls) {
      switch (r.kind) {
        case step::compute:
          (*r.fn)(r.op->key, r.stream);
          check_cuda(Api::get_last_error(), r.source, "kernel launch");
          break;
        case step::custom:
          (*r.custom)(*r.op, r.stream);
          check_cuda(Api::get_last_error(), r.source, "communication override launch");
          break;
        case step::record: check_cuda(Api::event_record(r.event, r.stream), r.source, "cudaEventRecord"); break;
        case step::wait: check_cuda(Api::stream_wait_event(r.stream, r.event), r.source, "cudaStreamWaitEvent"); break;
        case step::group_start: check_nccl(Api::group_start(), r, "ncclGroupStart"); break;
        case step::group_end: check_nccl(Api::group_end(), r, "ncclGroupEnd"); break;
        case step::all_gather:
          check_nccl(Api::all_gather(r.send, r.recv, r.count, r.dtype, r.comm, r.stream), r, "ncclAllGather");
          break;
        case step::reduce_scatter:
          check_nccl(Api::reduce_scatter(r.send, r.recv, r.count, r.dtype, r.comm, r.stream), r, "ncclReduceScatter");
          break;
        case step::all_reduce:
          check_nccl(Api::all_reduce(r.send, r.recv, r.count, r.dtype, r.comm, r.stream), r, "ncclAllReduce");
          break;
        case step::send:
          check_nccl(Api::send(r.send, r.count, r.dtype, r.peer, r.comm, r.stream), r, "ncclSend");
          break;
        case step::recv:
          check_nccl(Api::recv(r.recv, r.count, r.dtype, r.peer, r.comm, r.stream), r, "ncclRecv");
          break;
        case step::host_sync: watchdog_.wait_streams(watchdog_.options().timeout); break;
        case step::host_wait: watchdog_.wait_event(r.event, r.op->event, r.source, watchdog_.options().timeout); break;
        case step::timing_record:
          check_cuda(Api::event_record(r.event, r.stream), r.source, "cudaEventRecord (timing)");
          break;
        default: __builtin_unreachable();  // compile() makes no other kind; no range check per op
      }
    }
  }

  void check_cuda(typename Api::cuda_status_t status, int op, const char* call) const {
    if (!(status == Api::cuda_success)) [[unlikely]]
      cuda_failed(status, op, call);
  }
  void check_nccl(typename Api::nccl_status_t status, const resolved& r, const char* call) {
    if (!(status == Api::nccl_success)) [[unlikely]]
      nccl_not_done(status, r, call);
  }

  [[noreturn]] __attribute__((noinline, cold)) void cuda_failed(typename Api::cuda_status_t status, int op,
                                                                const char* call) const {
    throw call_error(where(op) + ": [EXEC-CUDA] " + call + " failed: " + Api::cuda_error_name(status) + ": " +
                         Api::cuda_error_string(status),
                     program_.rank, op);
  }

  __attribute__((noinline, cold)) void nccl_not_done(typename Api::nccl_status_t status, const resolved& r,
                                                     const char* call) {
    if (status == Api::nccl_in_progress) {  // non-blocking communicator: wait until enqueued
      watchdog_.wait_enqueued(r.source, where(r.source) + ": " + call + " returned ncclInProgress");
      return;
    }
    std::string detail;
    if (r.kind != step::group_start && r.kind != step::group_end) detail = Api::nccl_last_error(r.comm);
    throw call_error(where(r.source) + ": [EXEC-NCCL] " + call + " failed: " + Api::nccl_error_name(status) + ": " +
                         Api::nccl_error_string(status) + (detail.empty() ? "" : " (" + detail + ")"),
                     program_.rank, r.source);
  }

  /// "rank R, op I 'display name' (kind ...)" for messages; op -1: the rank alone.
  std::string where(int op) const {
    std::string text = "rank " + std::to_string(program_.rank);
    if (op < 0) return text;
    const schedule::op& o = program_.ops[static_cast<std::size_t>(op)];
    text += ", op " + std::to_string(op) + " '" + schedule::display_name(o) + "' (";
    text += o.kind == schedule::op_kind::collective ? schedule::to_string(o.coll) : schedule::to_string(o.kind);
    if (schedule::is_communication(o.kind) && o.comm >= 0 && o.comm < static_cast<int>(program_.comms.size()))
      text += " on '" + program_.comms[static_cast<std::size_t>(o.comm)].name + "'";
    if (o.kind != schedule::op_kind::host_sync) text += ", stream " + std::to_string(o.stream);
    return text + ")";
  }

  std::string stream_label(int index) const {
    return std::to_string(index) + " (" +
           std::string(schedule::to_string(program_.streams[static_cast<std::size_t>(index)].role)) + ")";
  }

  // ---- pre-flight ----

  /// Communicator size and this rank's position in it, per program communicator.
  struct comm_shape {
    int size = 0;
    int position = -1;
  };

  /// The executor's id for a broken rule of the program model.
  static const char* id_of(schedule::structure_rule rule) {
    switch (rule) {
      case schedule::structure_rule::kind: return "EXEC-KIND";
      case schedule::structure_rule::stream: return "EXEC-STREAM";
      case schedule::structure_rule::comm: return "EXEC-COMM";
      case schedule::structure_rule::peer: return "EXEC-PEER";
      case schedule::structure_rule::event:
      case schedule::structure_rule::wait_order: return "EXEC-EVENT";
      case schedule::structure_rule::group: return "EXEC-GROUP";
      case schedule::structure_rule::buffer: return "EXEC-DATA";
      case schedule::structure_rule::size: return "EXEC-SIZE";
      case schedule::structure_rule::key: return "EXEC-KEY";
    }
    return "EXEC-PROGRAM";
  }

  /// What preflight finds: each problem with its op (-1: the program's), the first op named.
  struct preflight_problems {
    std::vector<std::string> lines;
    int first_op = -1;
  };
  void add(preflight_problems& found, int op, std::string text) const {
    if (found.first_op < 0 && op >= 0) found.first_op = op;
    found.lines.push_back(where(op) + ": " + std::move(text));
  }

  /// Every problem of the program and of what the trainer supplied for it, in one
  /// preflight_error, before anything is launched.
  void preflight() {
    preflight_problems found;
    check_streams(found);
    const std::vector<bool> readable = readable_ops(found);
    check_ops(readable, found);
    if (found.lines.empty()) return;
    std::string message = "[EXEC-PREFLIGHT] rank " + std::to_string(program_.rank) + ": " +
                          std::to_string(found.lines.size()) + (found.lines.size() == 1 ? " problem" : " problems") +
                          " before launch, nothing was launched:";
    for (const std::string& line : found.lines) message += "\n  " + line;
    throw preflight_error(message, program_.rank, found.first_op);
  }

  /// The program has streams, and as many were lent as it has (or none).
  void check_streams(preflight_problems& found) const {
    const std::size_t num_streams = program_.streams.size();
    if (num_streams == 0)
      add(found, -1, "[EXEC-STREAM] the program has no streams; generate it with a schedule generator");
    if (!resources_.streams.empty() && resources_.streams.size() != num_streams)
      add(found, -1,
          "[EXEC-STREAM] " + std::to_string(resources_.streams.size()) + " streams were lent for a program with " +
              std::to_string(num_streams) + "; lend one per program stream, in order, or none");
  }

  /// The program itself, read as every backend reads it: which ops can be read. What the trainer
  /// supplied is checked only for those.
  std::vector<bool> readable_ops(preflight_problems& found) const {
    std::vector<bool> readable(program_.ops.size(), true);
    for (const schedule::structure_problem& p : schedule::structure_problems(program_)) {
      add(found, p.op, std::string("[") + id_of(p.rule) + "] " + p.text + "; fix the program");
      if (p.op >= 0) readable[static_cast<std::size_t>(p.op)] = false;
    }
    return readable;
  }

  /// Per readable op: a kernel for its type (one problem per missing type, at its first op); for
  /// communication, its communicator and buffers.
  void check_ops(const std::vector<bool>& readable, preflight_problems& found) {
    std::array<int, schedule::op_type_count> ops_of_type{};
    for (std::size_t i = 0; i < program_.ops.size(); ++i)
      if (readable[i] && program_.ops[i].kind == schedule::op_kind::compute)
        ++ops_of_type[static_cast<std::size_t>(program_.ops[i].key.type)];
    std::array<bool, schedule::op_type_count> kernel_reported{};
    std::vector<bool> comm_checked(program_.comms.size(), false);
    bool provider_reported = false;
    shapes_.assign(program_.comms.size(), {});
    buffers_.assign(program_.ops.size(), {});
    const auto problem = [&](int op, std::string text) { add(found, op, std::move(text)); };
    for (int i = 0; i < static_cast<int>(program_.ops.size()); ++i) {
      const schedule::op& o = program_.ops[static_cast<std::size_t>(i)];
      if (!readable[static_cast<std::size_t>(i)]) continue;
      const auto type = static_cast<std::size_t>(o.key.type);
      if (o.kind == schedule::op_kind::compute && !resources_.kernels.contains(o.key.type) &&
          !std::exchange(kernel_reported[type], true))
        add(found, i, missing_kernel(o, ops_of_type[type]));
      if (!schedule::is_communication(o.kind) || resources_.comm_overrides.contains(o.key.type)) continue;
      if (auto checked = comm_checked[static_cast<std::size_t>(o.comm)]; !checked) {
        checked = true;
        check_comm(i, o.comm, found);
      }
      if (shapes_[static_cast<std::size_t>(o.comm)].size == 0) continue;
      if (!resources_.buffers) {
        if (!std::exchange(provider_reported, true))
          add(found, i,
              "[EXEC-BUFFER] no buffer provider was supplied; set resources.buffers to a callable "
              "returning each communication op's buffer (buffer(const schedule::op&))");
        continue;
      }
      buffers_[static_cast<std::size_t>(i)] = resources_.buffers(o);
      check_buffer(i, o, buffers_[static_cast<std::size_t>(i)], problem);
    }
  }

  /// The problem of compute op `o`'s type having no kernel (`count` ops of that type).
  static std::string missing_kernel(const schedule::op& o, int count) {
    const std::string name(schedule::to_string(o.key.type));
    return "[EXEC-KERNEL] no kernel for op type '" + name + "' (" + std::to_string(count) +
           (count == 1 ? " op" : " ops") + ", the first '" + schedule::display_name(o) +
           "'); add cuda::on<op_type::" + name + ">(...) to kernels_for, or set resources.kernels[op_type::" + name +
           "]";
  }

  /// Communicator `index` (first used by op `op`): supplied, of the program's size, with this
  /// rank where the program puts it; then its shape is known and it is in use.
  void check_comm(int op, int index, preflight_problems& found) {
    const schedule::communicator& c = program_.comms[static_cast<std::size_t>(index)];
    const auto supplied = resources_.comms.find(c.name);
    if (supplied == resources_.comms.end()) {
      add(found, op,
          "[EXEC-COMM] no communicator '" + c.name + "' was supplied; add the NCCL communicator of ranks " +
              rank_list(c.ranks) + " to resources.comms[\"" + c.name + "\"]");
      return;
    }
    int count = -1, user_rank = -1;
    const auto count_status = Api::comm_count(supplied->second, &count);
    const auto rank_status = Api::comm_user_rank(supplied->second, &user_rank);
    if (!(count_status == Api::nccl_success) || !(rank_status == Api::nccl_success)) {
      const auto bad = count_status == Api::nccl_success ? rank_status : count_status;
      add(found, op,
          "[EXEC-COMM] querying communicator '" + c.name + "' failed: " + Api::nccl_error_name(bad) + ": " +
              Api::nccl_error_string(bad));
      return;
    }
    const int expected_position = schedule::member_index(c, program_.rank);
    if (count != static_cast<int>(c.ranks.size()) || user_rank != expected_position) {
      add(found, op,
          "[EXEC-COMM] communicator '" + c.name + "' has " + std::to_string(count) +
              " ranks and this process is its rank " + std::to_string(user_rank) + ", but the program needs " +
              std::to_string(c.ranks.size()) + " ranks (" + rank_list(c.ranks) + ") with global rank " +
              std::to_string(program_.rank) + " at position " + std::to_string(expected_position) +
              "; supply the matching communicator");
      return;
    }
    shapes_[static_cast<std::size_t>(index)] = {count, user_rank};
    used_comms_.emplace_back(c.name, supplied->second);
  }

  template <class Problem>
  void check_buffer(int i, const schedule::op& o, const buffer& b, Problem& problem) const {
    const int n = shapes_[static_cast<std::size_t>(o.comm)].size;
    const bool split = o.kind == schedule::op_kind::collective && o.coll != schedule::collective::all_reduce;
    const std::int64_t part = split ? o.bytes / n : o.bytes;
    std::int64_t send_needed = 0, recv_needed = 0;
    switch (o.kind) {
      case schedule::op_kind::send: send_needed = o.bytes; break;
      case schedule::op_kind::recv: recv_needed = o.bytes; break;
      default:
        switch (o.coll) {
          case schedule::collective::all_gather: send_needed = part, recv_needed = o.bytes; break;
          case schedule::collective::reduce_scatter: send_needed = o.bytes, recv_needed = part; break;
          case schedule::collective::all_reduce:
          case schedule::collective::all_to_all: send_needed = o.bytes, recv_needed = o.bytes; break;
        }
    }
    // The fix names the fields to fill and the bytes each must hold: a trainer whose provider
    // returned buffer{}, or left a pointer unset, learns what to return instead.
    const std::string fix = "; return the op's device memory from resources.buffers: ";
    const auto field = [](const char* which, std::int64_t needed) {
      return std::string(".") + which + " with at least " + std::to_string(needed) + " bytes (." + which + "_bytes)";
    };
    if (b.send == nullptr && b.recv == nullptr && b.send_bytes == 0 && b.recv_bytes == 0) {
      std::string which, fields;
      for (const auto& [side, needed] : {std::pair{"send", send_needed}, std::pair{"recv", recv_needed}})
        if (needed > 0) {
          which += (which.empty() ? "" : " and ") + std::string(side);
          fields += (fields.empty() ? "" : ", ") + field(side, needed);
        }
      const bool both = send_needed > 0 && recv_needed > 0;
      problem(i, "[EXEC-BUFFER] the buffer provider gave the op an empty buffer: its " + which +
                     (both ? " device pointers are null and their sizes 0" : " device pointer is null and its size 0") +
                     fix + fields);
      return;
    }
    const std::int64_t element = static_cast<std::int64_t>(Api::element_size(b.dtype));
    if (element <= 0) {
      problem(i, "[EXEC-BUFFER] the op's buffer has a dtype of unknown size; use an NCCL dtype");
      return;
    }
    if (o.bytes <= 0 || (split && o.bytes % n != 0) || part % element != 0) {
      problem(i, "[EXEC-BUFFER] " + std::to_string(o.bytes) + " bytes" +
                     (split ? " in " + std::to_string(n) + " equal parts" : std::string()) +
                     " is not a whole number of " + std::to_string(element) +
                     "-byte elements; fix the "
                     "op's size or the buffer's dtype");
      return;
    }
    const auto side = [&](const char* which, const void* pointer, std::int64_t capacity, std::int64_t needed) {
      if (needed == 0) return;
      if (pointer == nullptr)
        problem(
            i, std::string("[EXEC-BUFFER] the op's ") + which + " device pointer is null" + fix + field(which, needed));
      else if (capacity < needed)
        problem(i, "[EXEC-BUFFER] the op's buffer has " + std::to_string(capacity) + " " + which +
                       " bytes, the op needs " + std::to_string(needed) + "; allocate a larger buffer");
    };
    side("send", b.send, b.send_bytes, send_needed);
    side("recv", b.recv, b.recv_bytes, recv_needed);
  }

  static std::string rank_list(const std::vector<int>& ranks) {
    std::string text = "{";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (i > 0) text += ' ';
      text += std::to_string(ranks[i]);
    }
    text += '}';
    return text;
  }

  // ---- resources and compilation ----

  void create_streams_and_events() {
    if (resources_.streams.empty()) {
      for (const schedule::stream& s : program_.streams) {
        stream_t created{};
        check_cuda(Api::stream_create(&created, s.priority), -1, "cudaStreamCreateWithPriority");
        streams_.push_back(created);
        owned_streams_.push_back(created);
      }
    } else {
      streams_ = resources_.streams;
    }
    const auto make_event = [&](const char* what) {
      event_t e{};
      check_cuda(Api::event_create(&e), -1, what);
      owned_events_.push_back(e);
      return e;
    };
    // The events its ops use, in id order: num_events is only a bound, which a program may set far
    // above its op count (a CUDA event per declared id would exhaust the device for INT_MAX).
    std::vector<int> used;
    for (const schedule::op& o : program_.ops)
      if (o.event >= 0 && (o.kind == schedule::op_kind::record || o.kind == schedule::op_kind::wait ||
                           o.kind == schedule::op_kind::host_sync))
        used.push_back(o.event);
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    events_ =
        schedule::event_table<event_t>(static_cast<std::size_t>(program_.num_events), program_.ops.size(), event_t{});
    for (const int e : used) events_.set(static_cast<std::size_t>(e), make_event("cudaEventCreateWithFlags"));
    fork_ = make_event("cudaEventCreateWithFlags (graph fork)");
    joins_.assign(1, event_t{});
    for (std::size_t i = 1; i < streams_.size(); ++i)
      joins_.push_back(make_event("cudaEventCreateWithFlags (graph join)"));
  }

  void compile() {
    const schedule::rank_order order(program_);
    for (std::size_t i = 0; i < program_.ops.size(); ++i) {
      const schedule::op& o = program_.ops[i];
      resolved r;
      r.source = static_cast<int>(i);
      r.op = &o;
      if (o.kind != schedule::op_kind::host_sync) r.stream = streams_[static_cast<std::size_t>(o.stream)];
      const bool grouped = o.group >= 0;
      if (grouped && order.group_first(i) == i)
        calls_.push_back(resolved{.kind = step::group_start, .source = r.source});
      switch (o.kind) {
        case schedule::op_kind::compute:
          r.kind = step::compute;
          r.fn = &resources_.kernels[o.key.type];
          calls_.push_back(r);
          calls_per_step_ += 1;  // the launch check; the kernel counts below
          break;
        case schedule::op_kind::record:
        case schedule::op_kind::wait:
          r.kind = o.kind == schedule::op_kind::record ? step::record : step::wait;
          r.event = events_[static_cast<std::size_t>(o.event)];
          calls_.push_back(r);
          break;
        case schedule::op_kind::host_sync:
          r.kind = o.event < 0 ? step::host_sync : step::host_wait;
          if (o.event >= 0) r.event = events_[static_cast<std::size_t>(o.event)];
          calls_.push_back(r);
          break;
        case schedule::op_kind::collective:
        case schedule::op_kind::send:
        case schedule::op_kind::recv:
          if (resources_.comm_overrides.contains(o.key.type)) {
            r.kind = step::custom;
            r.custom = &resources_.comm_overrides[o.key.type];
            calls_.push_back(r);
            calls_per_step_ += 1;  // the launch check
            break;
          }
          compile_nccl(o, r);
          break;
      }
      if (grouped && order.group_last(i) == i)
        calls_.push_back(resolved{.kind = step::group_end, .source = static_cast<int>(order.group_first(i))});
    }
    for (const resolved& c : calls_)  // host waits poll: as many calls as it takes
      calls_per_step_ += c.kind == step::host_sync || c.kind == step::host_wait ? 0 : 1;
    buffers_ = {};  // kept in the calls
  }

  void compile_nccl(const schedule::op& o, resolved r) {
    const buffer& b = buffers_[static_cast<std::size_t>(r.source)];
    const std::size_t n = static_cast<std::size_t>(shapes_[static_cast<std::size_t>(o.comm)].size);
    const std::size_t element = Api::element_size(b.dtype);
    const std::size_t bytes = static_cast<std::size_t>(o.bytes);
    r.comm = resources_.comms.find(program_.comms[static_cast<std::size_t>(o.comm)].name)->second;
    r.dtype = b.dtype;
    r.send = b.send;
    r.recv = b.recv;
    r.peer = o.peer;
    if (o.kind == schedule::op_kind::send || o.kind == schedule::op_kind::recv) {
      r.kind = o.kind == schedule::op_kind::send ? step::send : step::recv;
      r.count = bytes / element;
      calls_.push_back(r);
      return;
    }
    if (o.coll != schedule::collective::all_to_all) {
      r.kind = o.coll == schedule::collective::all_gather       ? step::all_gather
               : o.coll == schedule::collective::reduce_scatter ? step::reduce_scatter
                                                                : step::all_reduce;
      r.count = (o.coll == schedule::collective::all_reduce ? bytes : bytes / n) / element;
      calls_.push_back(r);
      return;
    }
    // all_to_all: part p of the send buffer goes to peer p, part p of the receive buffer comes
    // from it; one NCCL group unless the op already is in one.
    const std::size_t part = bytes / n;
    if (o.group < 0) calls_.push_back(resolved{.kind = step::group_start, .source = r.source});
    for (std::size_t p = 0; p < n; ++p) {
      resolved to = r, from = r;
      to.kind = step::send;
      to.peer = from.peer = static_cast<int>(p);
      to.send = static_cast<const char*>(b.send) + p * part;
      to.count = from.count = part / element;
      from.kind = step::recv;
      from.recv = static_cast<char*>(b.recv) + p * part;
      calls_.push_back(to);
      calls_.push_back(from);
    }
    if (o.group < 0) calls_.push_back(resolved{.kind = step::group_end, .source = r.source});
  }

  // ---- the timing mode ----

  /// A pair of timing events around the calls of `ops` (one op, or an NCCL group's members).
  struct timed_interval {
    event_t start{}, end{};
    std::vector<int> ops{};
  };

  /// Builds the timed list from the compiled one, and creates its events; once.
  void prepare_timing() {
    if (timing_ready_) return;
    intervals_.clear();
    timed_calls_.clear();
    // The op's stream: also a group's (its members share one), whose group_start has none.
    const auto stream_of = [&](int op) {
      return streams_[static_cast<std::size_t>(program_.ops[static_cast<std::size_t>(op)].stream)];
    };
    const auto open = [&](const resolved& first) {
      timed_interval t;
      for (event_t* e : {&t.start, &t.end}) {
        check_cuda(Api::timing_event_create(e), first.source, "cudaEventCreateWithFlags (timing)");
        owned_events_.push_back(*e);
      }
      t.ops.push_back(first.source);
      timed_calls_.push_back(
          {.kind = step::timing_record, .source = first.source, .stream = stream_of(first.source), .event = t.start});
      intervals_.push_back(std::move(t));
      timed_calls_.push_back(first);
    };
    const auto close = [&] {
      const int first = intervals_.back().ops.front();
      timed_calls_.push_back(
          {.kind = step::timing_record, .source = first, .stream = stream_of(first), .event = intervals_.back().end});
    };
    bool grouped = false;  // between a group_start and its group_end
    for (const resolved& c : calls_) {
      switch (c.kind) {
        case step::record:
        case step::wait:
        case step::host_sync:
        case step::host_wait: timed_calls_.push_back(c); break;
        case step::group_start:
          open(c);
          grouped = true;
          break;
        case step::group_end:
          timed_calls_.push_back(c);
          close();
          grouped = false;
          break;
        default:  // an op's call: an interval of its own, or one more member of the open group's
          if (!grouped) {
            open(c);
            close();
            break;
          }
          if (intervals_.back().ops.back() != c.source) intervals_.back().ops.push_back(c.source);
          timed_calls_.push_back(c);
      }
    }
    timing_ready_ = true;
  }

  void drop_graph() {
    if (captured_) Api::graph_exec_destroy(graph_exec_);
    captured_ = false;
  }

  /// Destroys what the executor created; statuses are ignored (a destructor cannot report).
  void release() noexcept {
    drop_graph();
    for (const event_t& e : owned_events_) Api::event_destroy(e);
    for (const stream_t& s : owned_streams_) Api::stream_destroy(s);
    owned_events_.clear();
    owned_streams_.clear();
  }

  schedule::program program_;
  resources resources_;
  basic_watchdog<Api> watchdog_;
  std::vector<comm_shape> shapes_{};
  std::vector<buffer> buffers_{};  ///< per op, the provider's answer, until compiled
  std::vector<std::pair<std::string, comm_t>> used_comms_{};
  std::vector<stream_t> streams_{};
  std::vector<stream_t> owned_streams_{};
  /// The program's events by id (those its ops use; see create_streams_and_events).
  schedule::event_table<event_t> events_{0, 0, event_t{}};
  std::vector<event_t> owned_events_{};
  event_t fork_{};
  std::vector<event_t> joins_{};
  std::vector<resolved> calls_{};
  std::size_t calls_per_step_ = 0;
  std::vector<resolved> timed_calls_{};  ///< `calls_` with the timing records, once prepared
  std::vector<timed_interval> intervals_{};
  bool timing_ready_ = false;
  typename Api::graph_exec_t graph_exec_{};
  bool captured_ = false;
};

}  // namespace overlap::cuda
