#pragma once
/// @file
/// Appending ops to one rank's program: what every family's builder shares, so that several
/// builders can write into one program (the composed step) without clashing on event, group,
/// stream, sequence or buffer numbers.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/reserve_large.hpp>

namespace overlap::schedule::detail {

/// Names of the buffers a layer's builders share with each other and with the DP buckets.
inline buffer activation(int layer, int micro_batch) {
  return {.kind = buffer_kind::activation, .at = {.layer = layer, .micro_batch = micro_batch}};
}
inline buffer activation_grad(int layer, int micro_batch) {
  return {.kind = buffer_kind::activation_grad, .at = {.layer = layer, .micro_batch = micro_batch}};
}
/// The tensors an op of type `t` computes with (or writes the gradient of), named by the forward
/// op that reads them first; none for ops without weights.
constexpr op_type weights_of(op_type t) {
  switch (t) {
    case op_type::qkv_fprop:
    case op_type::qkv_dgrad:
    case op_type::qkv_wgrad: return op_type::qkv_fprop;
    case op_type::proj_fprop:
    case op_type::proj_dgrad:
    case op_type::proj_wgrad: return op_type::proj_fprop;
    case op_type::fc1_fprop:
    case op_type::fc1_dgrad:
    case op_type::fc1_wgrad: return op_type::fc1_fprop;
    case op_type::fc2_fprop:
    case op_type::fc2_dgrad:
    case op_type::fc2_wgrad: return op_type::fc2_fprop;
    case op_type::router_fprop:
    case op_type::router_bprop: return op_type::router_fprop;
    case op_type::experts_fprop:
    case op_type::experts_dgrad:
    case op_type::experts_wgrad: return op_type::experts_fprop;
    case op_type::shared_experts_fprop:
    case op_type::shared_experts_dgrad:
    case op_type::shared_experts_wgrad: return op_type::shared_experts_fprop;
    case op_type::embedding_fprop:
    case op_type::embedding_bprop: return op_type::embedding_fprop;
    case op_type::lm_head_fprop:
    case op_type::lm_head_bprop: return op_type::lm_head_fprop;
    case op_type::mtp_proj_fprop:
    case op_type::mtp_proj_dgrad:
    case op_type::mtp_proj_wgrad: return op_type::mtp_proj_fprop;
    case op_type::layernorm_fprop:
    case op_type::layernorm_bprop: return op_type::layernorm_fprop;
    default: return op_type::none;
  }
}

/// The tensors whose gradients an op of type `t` completes (none if it completes none): each
/// weight-gradient GEMM, and the backward of what has no separate weight gradient.
constexpr op_type gradients_of(op_type t) {
  switch (t) {
    case op_type::qkv_wgrad:
    case op_type::proj_wgrad:
    case op_type::fc1_wgrad:
    case op_type::fc2_wgrad:
    case op_type::mtp_proj_wgrad:
    case op_type::router_bprop:
    case op_type::experts_wgrad:
    case op_type::shared_experts_wgrad:
    case op_type::embedding_bprop:
    case op_type::lm_head_bprop:
    case op_type::layernorm_bprop: return weights_of(t);
    default: return op_type::none;
  }
}

/// The parameters (gradients) of the tensors `of` names: of layer `layer`, or (-1) the
/// embedding's, the final norm's, the output layer's.
inline buffer parameters(op_type of, int layer, bool expert = false) {
  return {.kind = buffer_kind::parameters, .of = of, .at = {.layer = layer}, .expert = expert};
}
inline buffer gradients(op_type of, int layer, bool expert = false) {
  return {.kind = buffer_kind::gradients, .of = of, .at = {.layer = layer}, .expert = expert};
}

class emitter {
 public:
  explicit emitter(program& p) : p_(p) {}
  /// Room for a program of about `ops` ops and `buffers` buffers, so that one of that size grows
  /// no copy: the room a step's previous program took (programs of one step differ by a few
  /// layers). Untouched room costs address space, not memory.
  void reserve(std::size_t ops, std::size_t buffers) {
    overlap::detail::reserve_large(p_.ops, ops);
    buffers_.reserve(buffers);
    p_.buffers.reserve(buffers);
  }

  program& target() { return p_; }
  int rank() const { return p_.rank; }

  /// Adds a stream and returns its index.
  int add_stream(stream_role role, int priority) {
    p_.streams.push_back({role, priority});
    return static_cast<int>(p_.streams.size()) - 1;
  }
  /// The communicator called `name` (added with `ranks` on first use).
  int comm(const std::string& name, const std::vector<int>& ranks) {
    for (std::size_t c = 0; c < p_.comms.size(); ++c)
      if (p_.comms[c].name == name) return static_cast<int>(c);
    p_.comms.push_back({name, ranks});
    seq_.push_back(0);
    return static_cast<int>(p_.comms.size()) - 1;
  }
  int new_group() { return groups_++; }
  /// The buffer `b` (added on first use): equal descriptions are one buffer.
  int buffer(const schedule::buffer& b) {
    const auto [it, added] = buffers_.try_emplace(b, static_cast<int>(p_.buffers.size()));
    if (added) p_.buffers.push_back(b);
    return it->second;
  }
  /// The buffer `b` of `bytes` (the largest size it was given).
  int buffer(const schedule::buffer& b, std::int64_t bytes) {
    const int i = buffer(b);
    const auto at = static_cast<std::size_t>(i);
    if (p_.buffer_bytes.size() <= at) p_.buffer_bytes.resize(at + 1, 0);
    p_.buffer_bytes[at] = std::max(p_.buffer_bytes[at], bytes);
    return i;
  }

  /// Appends `o`, after the deferred record of its stream (all of them before a host sync).
  void push(op o) {
    if (o.kind == op_kind::host_sync) {
      for (std::size_t s = 0; s < deferred_.size(); ++s) materialize(static_cast<int>(s));
    } else {
      materialize(o.stream);
    }
    overlap::detail::push_back_large(p_.ops, std::move(o));
  }
  /// Called with each compute op's key right before it is appended and right after: where the
  /// data-parallel buckets wait for parameters and learn that gradients are complete.
  struct compute_hooks {
    std::function<void(const op_key&)> before, after;
  };
  void set_hooks(compute_hooks hooks) { hooks_ = std::move(hooks); }
  /// The format the quantized GEMMs (`runs_quantized`) of the ops that follow take their
  /// operands in: the fp8 or fp4 recipe of the config, or native.
  void quantize(gemm_format f) { quantized_ = f; }
  /// The format the GEMMs of op type `t` take their operands in.
  gemm_format format_of(op_type t) const { return runs_quantized(t) ? quantized_ : gemm_format::native; }

  void compute(int stream, op_key key, double flops, buffer_list reads, buffer_list writes,
               std::int64_t memory_bytes = 0, gemm_shape gemm = {}) {
    if (hooks_.before) hooks_.before(key);
    push({.kind = op_kind::compute,
          .format = format_of(key.type),
          .stream = stream,
          .key = key,
          .flops = flops,
          .gemm = gemm,
          .memory_bytes = memory_bytes,
          .reads = std::move(reads),
          .writes = std::move(writes)});
    if (hooks_.after) hooks_.after(key);
  }
  /// A GEMM of `shape` (its flops follow from it).
  /// A GEMM op; `memory_bytes` are those of the memory-bound kernels its module runs around it.
  void gemm(int stream, op_key key, gemm_shape shape, buffer_list reads, buffer_list writes,
            std::int64_t memory_bytes = 0) {
    const double flops =
        2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k);
    compute(stream, key, flops, std::move(reads), std::move(writes), memory_bytes, shape);
  }
  /// A collective on communicator `comm`, numbered in the communicator's order.
  void collective(int stream, op_key key, schedule::collective c, int comm, std::int64_t bytes, buffer_list reads,
                  buffer_list writes, int sms = -1) {
    push({.kind = op_kind::collective,
          .stream = stream,
          .key = key,
          .coll = c,
          .comm = comm,
          .seq = seq_[static_cast<std::size_t>(comm)]++,
          .bytes = bytes,
          .sms = sms,
          .reads = std::move(reads),
          .writes = std::move(writes)});
  }
  /// A send (reads `data`) or recv (writes `data`) with communicator rank `peer` of `comm`.
  void p2p(op_kind kind, int stream, op_key key, int comm, int peer, std::int64_t bytes, buffer_list data,
           int group = -1, int sms = -1) {
    op o{.kind = kind,
         .stream = stream,
         .key = key,
         .comm = comm,
         .peer = peer,
         .bytes = bytes,
         .sms = sms,
         .group = group};
    (kind == op_kind::send ? o.reads : o.writes) = std::move(data);
    push(std::move(o));
  }

  /// An event that completes with what `stream` has been given so far. Its record op is issued
  /// late: right before the next op on `stream`, or before the first wait for it. With one
  /// hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) a record issued right behind a long kernel
  /// would hold every later launch of every stream until that kernel ends; issued late it
  /// holds nothing that does not wait for the kernel anyway. A record no op waits for is dropped.
  int record(int stream) {
    materialize(stream);
    const int e = p_.num_events++;
    if (deferred_.size() <= static_cast<std::size_t>(stream)) deferred_.resize(stream + 1, -1);
    deferred_[stream] = e;
    return e;
  }
  void wait(int stream, int event) {
    materialize_record_of(event);
    push({.kind = op_kind::wait, .stream = stream, .key = {.type = op_type::event_wait}, .event = event});
  }
  /// The host waits for `event` (cudaEventSynchronize) before it issues anything more.
  void host_wait(op_key key, int event) {
    materialize_record_of(event);
    overlap::detail::push_back_large(p_.ops, op{.kind = op_kind::host_sync, .key = key, .event = event});
  }
  /// `to` waits for what `from` issued so far.
  void cross(int from, int to) {
    if (from != to) wait(to, record(from));
  }

 private:
  /// Issues `event`'s record now if it is still deferred.
  void materialize_record_of(int event) {
    for (std::size_t s = 0; s < deferred_.size(); ++s)
      if (deferred_[s] == event) materialize(static_cast<int>(s));
  }
  void materialize(int stream) {
    if (static_cast<std::size_t>(stream) >= deferred_.size() || deferred_[stream] < 0) return;
    overlap::detail::push_back_large(p_.ops, op{.kind = op_kind::record,
                                                .stream = stream,
                                                .key = {.type = op_type::event_record},
                                                .event = deferred_[stream]});
    deferred_[stream] = -1;
  }

  program& p_;
  int groups_ = 0;
  std::vector<int> deferred_;      ///< per stream: the event whose record is not issued yet, or -1
  std::vector<std::int64_t> seq_;  ///< per communicator: collectives issued so far
  /// A buffer description's fields mixed into one word (a lookup per op's every buffer: a hash
  /// table, not a tree of eight-field keys).
  struct buffer_hash {
    std::size_t operator()(const schedule::buffer& b) const noexcept {
      std::uint64_t h = static_cast<std::uint64_t>(b.kind) | static_cast<std::uint64_t>(b.of) << 8 |
                        static_cast<std::uint64_t>(b.expert) << 16;
      for (const int v : {b.at.layer, b.at.micro_batch, b.at.chunk, b.at.bucket, b.at.split})
        h = (h ^ static_cast<std::uint32_t>(v)) * 0x9e3779b97f4a7c15ull;
      return static_cast<std::size_t>(h ^ (h >> 32));
    }
  };
  std::unordered_map<schedule::buffer, int, buffer_hash> buffers_;
  compute_hooks hooks_;
  gemm_format quantized_ = gemm_format::native;
};

}  // namespace overlap::schedule::detail
