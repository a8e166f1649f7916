#pragma once
/// @file
/// The step program: what one rank issues for one training step, as plain data that every backend
/// (verifier, simulator, trace writer, CUDA executor) consumes as it is. Ops are in host issue
/// order; each runs on one stream, has a typed key (op_key.hpp) and declares the buffers it reads
/// and writes; collectives and p2p name a communicator and carry a per-communicator sequence
/// number so that order can be matched across ranks. What the program means (who waits for whom,
/// who meets whom) is semantics.hpp's.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <overlap/program/buffer_list.hpp>
#include <overlap/program/family.hpp>
#include <overlap/program/op_key.hpp>

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

/// What a buffer holds. The verifier checks data flow on buffer indices; the kind and location
/// only name them in reports.
enum class buffer_kind : std::uint8_t {
  activation,         ///< a layer's input (sequence-parallel shard with TP), saved for backward
  activation_grad,    ///< the gradient flowing back into a layer
  workspace,          ///< an intermediate inside a layer: the output of op type `of`
  gathered,           ///< the all-gathered input of GEMM `of` (TP)
  scattered,          ///< the reduce-scattered output of GEMM `of` (TP)
  ring_chunk,         ///< one chunk of a TP ring exchange
  tokens,             ///< MoE tokens: routed, dispatched, computed or combined
  parameters,         ///< a layer's (or the embedding's) parameters
  gradients,          ///< their accumulated gradients
  reduced_gradients,  ///< a bucket's reduced gradients
  parameter_shard,    ///< the parameters the optimizer updates (a bucket's shard)
  loss,               ///< the loss's saved state: the output layer's softmax over the vocabulary
  optimizer_state,    ///< Adam's master weights and moments of what the optimizer updates (optimizer_state.hpp)
  userbuffer          ///< a TP overlap slot's communication buffer (Transformer Engine's userbuffer), held
                      ///< through the step; what its slot gathers, exchanges or reduces lives in it
};

struct buffer {
  buffer_kind kind = buffer_kind::workspace;
  op_type of = op_type::none;  ///< the op type whose output (or, for parameters, tensor) it is
  location at{};
  bool expert = false;
  friend constexpr bool operator==(const buffer&, const buffer&) = default;
};

/// A compute op's matrix problem on this rank: `groups` products of an m x k matrix and a k x n
/// one. What they are follows the op's type, so that a cost model can look the kernel up:
/// - a GEMM (a TP slot, the router, the LM head): one product, groups 1;
/// - routed experts (`experts_fprop`, `experts_dgrad`, `experts_wgrad`): a gated MLP per local
///   expert, groups = local experts, m = tokens per expert, n = the expert's FFN size, k = the
///   hidden size (fc1 is k -> 2n, fc2 n -> k; their backward the same products transposed);
/// - core attention (`attn_core_fprop`, `attn_core_bprop`): groups = micro-batch size x heads
///   on this rank, m = n = the sequence, k = the head size (the scores Q K^T, causal).
///
/// Each size is at most `most`: the largest GEMMs trained today are four orders of magnitude
/// smaller, and within it a cost model's tile counts and flops cannot overflow.
struct gemm_shape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t groups = 1;
  static constexpr std::int64_t most = std::int64_t{1} << 31;
  /// Every size of m, n and k in 0..most, all of them 0 (no problem) or none, groups in 1..most.
  constexpr bool valid() const {
    const auto within = [](std::int64_t v) {
      return static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(most);
    };
    return within(m) && within(n) && within(k) && (m == 0) == (n == 0) && (n == 0) == (k == 0) && groups >= 1 &&
           groups <= most;
  }
  friend constexpr bool operator==(const gemm_shape&, const gemm_shape&) = default;
};

/// The number format a compute op's matrix products take their operands in: the step's own
/// precision (bf16, fp16 or fp32), or quantized by Transformer Engine's fp8 recipes (e4m3 /
/// hybrid, per-tensor or MXFP8 block scaling) or its NVFP4 recipe.
enum class gemm_format : std::uint8_t { native, fp8, fp4 };

/// One issued operation. Fields that an op kind does not use keep their defaults.
struct op {
  op_kind kind = op_kind::compute;
  gemm_format format = gemm_format::native;  ///< compute: its products' operands (fits the padding)
  int stream = 0;                            ///< index into program::streams (unused by host_sync)
  op_key key{};                              ///< what the op is and where it sits
  collective coll = collective::all_reduce;
  int comm = -1;                  ///< index into program::comms (collective, send, recv)
  int peer = -1;                  ///< send/recv: the other side's rank within `comm`
  std::int64_t seq = -1;          ///< collective: its position among `comm`'s collectives
  std::int64_t bytes = 0;         ///< collective: the full tensor (all_gather output, reduce_scatter
                                  ///< input, all_reduce buffer, all_to_all send volume); p2p: message
  double flops = 0;               ///< compute: floating-point operations
  gemm_shape gemm{};              ///< compute: its matrix problem (m == 0: none, or not modelled as one)
  std::int64_t memory_bytes = 0;  ///< compute: bytes moved to and from device memory (a GEMM: by
                                  ///< the memory-bound kernels of its module, around the GEMM)
  int event = -1;                 ///< record/wait; host_sync: the event it waits for (-1: every stream)
  /// Communication: the SMs its kernel holds while it runs; -1 for the library's usual figure
  /// (machine::comm_sms or p2p_sms in the simulator; NCCL's own choice on a GPU), 0 for a copy-
  /// engine transfer. TP userbuffer slots set it from their `num_sm`.
  int sms = -1;
  /// Communication ops of one rank with the same group id (>= 0) form one NCCL group
  /// (ncclGroupStart/End): consecutive in issue order, on one stream, launched together; stream
  /// and communicator order apply to the group as a whole, not among its members.
  int group = -1;
  buffer_list reads{};   ///< indices into program::buffers
  buffer_list writes{};  ///< indices into program::buffers

  /// The overlap family whose communication this is (none for compute and sync ops).
  schedule::family family() const { return family_of(key.type); }
};

/// What one rank issues for one step.
struct program {
  int rank = 0;  ///< global rank
  /// The CUDA_DEVICE_MAX_CONNECTIONS the run sets, as the config resolved it (0: not said, so
  /// CUDA's default of 8): how many hardware queues its streams share, which decides whether a
  /// communication kernel can pass a GEMM queued before it. The simulator reads it.
  int cuda_device_max_connections = 0;
  std::vector<stream> streams{};
  std::vector<communicator> comms{};
  std::vector<op> ops{};
  int num_events = 0;
  std::vector<buffer> buffers{};
  /// The bytes of each buffer, by index into `buffers` (shorter: 0 for the rest). 0 is a buffer
  /// that takes no memory of its own: a view of another (a bucket of the gradient buffer, a
  /// chunk inside a userbuffer). sim/analysis/memory.hpp turns sizes and the ops' reads and writes into
  /// the memory a rank needs.
  std::vector<std::int64_t> buffer_bytes{};
};

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
constexpr std::string_view to_string(gemm_format f) {
  switch (f) {
    case gemm_format::native: return "native";
    case gemm_format::fp8: return "fp8";
    case gemm_format::fp4: return "fp4";
  }
  return "?";
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
constexpr std::string_view to_string(buffer_kind k) {
  switch (k) {
    case buffer_kind::activation: return "activation";
    case buffer_kind::activation_grad: return "activation_grad";
    case buffer_kind::workspace: return "workspace";
    case buffer_kind::gathered: return "gathered";
    case buffer_kind::scattered: return "scattered";
    case buffer_kind::ring_chunk: return "ring_chunk";
    case buffer_kind::tokens: return "tokens";
    case buffer_kind::parameters: return "parameters";
    case buffer_kind::gradients: return "gradients";
    case buffer_kind::reduced_gradients: return "reduced_gradients";
    case buffer_kind::parameter_shard: return "parameter_shard";
    case buffer_kind::loss: return "loss";
    case buffer_kind::optimizer_state: return "optimizer_state";
    case buffer_kind::userbuffer: return "userbuffer";
  }
  return "buffer";
}

/// "fc1_fprop l3 mb0" for an op; its kind for an untyped one.
inline std::string display_name(const op& o) {
  if (o.key.type != op_type::none) return display_name(o.key);
  return std::string(o.kind == op_kind::collective ? to_string(o.coll) : to_string(o.kind));
}

/// "activation l3 mb0" or "workspace qkv_fprop l3 mb0" for a buffer.
inline std::string display_name(const buffer& b) {
  std::string text(to_string(b.kind));
  if (b.of != op_type::none) (text += ' ') += to_string(b.of);
  append_coordinates(text, b.at);
  return b.expert ? text + " expert" : text;
}

}  // namespace overlap::schedule
