#pragma once
/// @file
/// The step program: what one rank issues for one training step, as plain data that every backend
/// (verifier, simulator, trace writer, CUDA executor) consumes as it is. Ops are in host issue
/// order; each runs on one stream; collectives and p2p name a communicator and carry a
/// per-communicator sequence number so that order can be matched across ranks.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace overlap::schedule {

/// What a stream is for; the executor creates (or borrows) one CUDA stream per entry.
enum class stream_role : std::uint8_t { compute, tp_comm, dp_comm, pp_send, pp_recv, ep_comm };

struct stream {
  stream_role role = stream_role::compute;
  int priority = 0;  ///< CUDA convention: lower is higher priority
};

/// A group of ranks that communicates; `ranks[i]` is the global rank of communicator rank i.
/// Communicators are matched across programs by name.
struct communicator {
  std::string name;
  std::vector<int> ranks;
};

enum class op_kind : std::uint8_t {
  compute,     ///< the trainer's kernel `name`
  collective,  ///< `coll` on `comm`, `bytes` per rank
  send,        ///< `bytes` to communicator rank `peer` of `comm`
  recv,        ///< `bytes` from communicator rank `peer` of `comm`
  record,      ///< records `event` on `stream`
  wait,        ///< `stream` waits for the latest record of `event`
  host_sync    ///< the host waits until everything issued before it has finished
};

enum class collective : std::uint8_t { all_gather, reduce_scatter, all_reduce, all_to_all };

/// The overlap family an op belongs to, for exposed-communication accounting.
enum class family : std::uint8_t { none, tp, dp, pp, ep };

/// Collectives, sends and receives: the ops that meet other ranks.
constexpr bool is_communication(op_kind k) {
  return k == op_kind::collective || k == op_kind::send || k == op_kind::recv;
}

// Names for reports, traces and tables.
constexpr std::string_view to_string(collective c) {
  switch (c) {
    case collective::all_gather: return "all_gather";
    case collective::reduce_scatter: return "reduce_scatter";
    case collective::all_reduce: return "all_reduce";
    case collective::all_to_all: return "all_to_all";
  }
  return "?";
}
constexpr std::string_view to_string(family f) {
  switch (f) {
    case family::none: return "none";
    case family::tp: return "tp";
    case family::dp: return "dp";
    case family::pp: return "pp";
    case family::ep: return "ep";
  }
  return "none";
}
constexpr std::string_view to_string(stream_role r) {
  switch (r) {
    case stream_role::compute: return "compute";
    case stream_role::tp_comm: return "tp_comm";
    case stream_role::dp_comm: return "dp_comm";
    case stream_role::pp_send: return "pp_send";
    case stream_role::pp_recv: return "pp_recv";
    case stream_role::ep_comm: return "ep_comm";
  }
  return "stream";
}
constexpr std::string_view to_string(op_kind k) {
  switch (k) {
    case op_kind::compute: return "compute";
    case op_kind::collective: return "collective";
    case op_kind::send: return "send";
    case op_kind::recv: return "recv";
    case op_kind::record: return "record";
    case op_kind::wait: return "wait";
    case op_kind::host_sync: return "host_sync";
  }
  return "op";
}

/// One issued operation. Fields that an op kind does not use keep their defaults.
struct op {
  op_kind kind = op_kind::compute;
  int stream = 0;  ///< index into program::streams (unused by host_sync)
  std::string name{};  ///< compute: the kernel's key; otherwise a label for reports and traces
  collective coll = collective::all_reduce;
  int comm = -1;          ///< index into program::comms (collective, send, recv)
  int peer = -1;          ///< send/recv: the other side's rank within `comm`
  std::int64_t seq = -1;  ///< collective: its position among `comm`'s collectives
  std::int64_t bytes = 0;  ///< collective: the full tensor (all_gather output, reduce_scatter
                           ///< input, all_reduce buffer, all_to_all send volume); p2p: message
  double flops = 0;        ///< compute: floating-point operations
  std::int64_t memory_bytes = 0;  ///< compute: bytes moved to and from device memory
  schedule::family family = schedule::family::none;
  int event = -1;  ///< record/wait
  /// Communication: the SMs its kernel holds while it runs; -1 for the library's usual figure
  /// (machine::comm_sms or p2p_sms in the simulator; NCCL's own choice on a GPU), 0 for a copy-
  /// engine transfer. TP userbuffer slots set it from their `num_sm`.
  int sms = -1;
  /// Communication ops of one rank with the same group id (>= 0) form one NCCL group
  /// (ncclGroupStart/End): consecutive in issue order, on one stream, launched together; stream
  /// and communicator order apply to the group as a whole, not among its members.
  int group = -1;
  std::vector<int> reads{};   ///< buffers the op reads
  std::vector<int> writes{};  ///< buffers the op writes
};

/// What one rank issues for one step.
struct program {
  int rank = 0;  ///< global rank
  std::vector<stream> streams{};
  std::vector<communicator> comms{};
  std::vector<op> ops{};
  int num_events = 0;
  int num_buffers = 0;
};

}  // namespace overlap::schedule
