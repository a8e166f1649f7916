#pragma once
/// @file
/// The TP family's generator: one step of a tensor-parallel group with sequence parallelism (no
/// PP/DP/EP composition yet). Each layer's GEMM slots use the method `cfg::resolved` gives them:
/// - ring_exchange on an all-gather slot: the GEMM runs chunk by chunk, the local chunk first,
///   while the next chunk arrives from the previous rank (one send/recv group per ring step); on a
///   reduce-scatter slot: each partial chunk goes to its owner as soon as it is computed, and the
///   owner sums the chunks;
/// - pipeline (reduce-scatter slots): the GEMM is split into `num_splits` and each chunk is
///   reduce-scattered on the tp stream as soon as it is computed;
/// - bulk (dgrad/wgrad slots): the collective runs on the tp stream next to the GEMM that does
///   not need it;
/// - none (TP overlap off): all-gather, GEMM and reduce-scatter in sequence on the compute stream.

#include <cstdint>
#include <string>
#include <vector>

#include <overlap/schedule/program.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

namespace detail {

/// Builds one tp rank's program.
class tp_builder {
 public:
  tp_builder(int rank, int tp, const workload& w) : tp_(tp), w_(w) {
    p_.rank = rank;
    p_.streams = {{stream_role::compute, 0}, {stream_role::tp_comm, -1}, {stream_role::tp_comm, -1}};
    p_.comms.push_back({"tp", {}});
    for (int i = 0; i < tp; ++i) p_.comms[0].ranks.push_back(i);
  }

  /// All-gather the sequence-parallel input, then a GEMM of `flops` (this rank's share).
  void all_gather_gemm(const ub::slot& slot, const std::string& name, double flops) {
    if (slot.method != ub::method::ring_exchange) {
      const bool side = slot.method != ub::method::none;
      if (side) cross(compute, comm);
      collective_on(side ? comm : compute, collective::all_gather, name + "_ag", gathered_bytes());
      if (side) cross(comm, compute);
      gemm(name, flops);
      return;
    }
    // Step i launches the GEMM on the chunk at hand (the local one first), then passes that
    // chunk on and receives the next one while the GEMM runs.
    for (int i = 0; i < tp_; ++i) {
      gemm(name + "_chunk" + std::to_string(i), flops / tp_);
      if (i + 1 == tp_) break;
      exchange(name + "_ring" + std::to_string(i), 1, 1);
      wait(compute, record(ring));
    }
  }

  /// A GEMM of `flops`, then its output reduce-scattered back to sequence-parallel form.
  void gemm_reduce_scatter(const ub::slot& slot, const std::string& name, double flops) {
    if (slot.method == ub::method::ring_exchange) {
      // Chunk i is computed for rank (r + i + 1) and sent to it; the last one is this rank's own.
      for (int i = 0; i < tp_; ++i) {
        gemm(name + "_chunk" + std::to_string(i), flops / tp_);
        if (i + 1 == tp_) break;
        cross(compute, ring);
        exchange(name + "_ring" + std::to_string(i), i + 1, i + 1);
      }
      cross(ring, compute);
      push({.kind = op_kind::compute, .stream = compute, .name = name + "_sum",
            .memory_bytes = gathered_bytes()});
      return;
    }
    if (slot.method == ub::method::pipeline) {
      for (int i = 0; i < slot.num_splits; ++i) {
        gemm(name + "_chunk" + std::to_string(i), flops / slot.num_splits);
        cross(compute, comm);
        collective_on(comm, collective::reduce_scatter, name + "_rs" + std::to_string(i),
                      gathered_bytes() / slot.num_splits);
      }
      cross(comm, compute);
      return;
    }
    gemm(name, flops);
    collective_on(compute, collective::reduce_scatter, name + "_rs", gathered_bytes());
  }

  /// The backward of a column-parallel GEMM: the wgrad slot all-gathers the saved input under the
  /// dgrad GEMM, the dgrad slot reduce-scatters the dgrad output under the wgrad GEMM (bulk). A
  /// dgrad slot that is not bulk (TE-2: its wgrad slot is empty, no weight gradient) is a
  /// reduce-scatter slot of its own. With TP overlap off everything runs in sequence.
  void column_backward(const ub::slot& wgrad_slot, const ub::slot& dgrad_slot,
                       const std::string& name, double flops) {
    if (dgrad_slot.method == ub::method::none) {
      collective_on(compute, collective::all_gather, name + "_input_ag", gathered_bytes());
      gemm(name + "_dgrad", flops);
      collective_on(compute, collective::reduce_scatter, name + "_dgrad_rs", gathered_bytes());
      gemm(name + "_wgrad", flops);
      return;
    }
    if (dgrad_slot.method != ub::method::bulk || wgrad_slot.method == ub::method::none) {
      gemm_reduce_scatter(dgrad_slot, name + "_dgrad", flops);
      return;
    }
    cross(compute, comm);
    collective_on(comm, collective::all_gather, name + "_input_ag", gathered_bytes());
    const int gathered = record(comm);
    gemm(name + "_dgrad", flops);
    cross(compute, comm);
    collective_on(comm, collective::reduce_scatter, name + "_dgrad_rs", gathered_bytes());
    wait(compute, gathered);
    gemm(name + "_wgrad", flops);
    cross(comm, compute);
  }

  void gemm(std::string name, double flops) {
    push({.kind = op_kind::compute, .stream = compute, .name = std::move(name), .flops = flops});
  }

  program take() { return std::move(p_); }

 private:
  static constexpr int compute = 0, comm = 1, ring = 2;

  /// The activations of the whole sequence: what an all-gather produces.
  std::int64_t gathered_bytes() const { return w_.tokens() * w_.hidden * w_.element_bytes(); }

  void push(op o) { p_.ops.push_back(std::move(o)); }
  int record(int stream) {
    const int e = p_.num_events++;
    push({.kind = op_kind::record, .stream = stream, .event = e});
    return e;
  }
  void wait(int stream, int event) { push({.kind = op_kind::wait, .stream = stream, .event = event}); }
  void cross(int from, int to) { wait(to, record(from)); }
  void collective_on(int stream, collective c, std::string name, std::int64_t bytes) {
    push({.kind = op_kind::collective, .stream = stream, .name = std::move(name), .coll = c,
          .comm = 0, .seq = seq_++, .bytes = bytes, .family = family::tp});
  }
  /// One ring step as an NCCL group: send a chunk `ahead` ranks forward, receive one from `behind`
  /// ranks back.
  void exchange(const std::string& name, int ahead, int behind) {
    const int r = p_.rank, group = groups_++;
    const std::int64_t chunk = gathered_bytes() / tp_;
    push({.kind = op_kind::send, .stream = ring, .name = name + "_send", .comm = 0,
          .peer = (r + ahead) % tp_, .bytes = chunk, .family = family::tp, .group = group});
    push({.kind = op_kind::recv, .stream = ring, .name = name + "_recv", .comm = 0,
          .peer = (r + tp_ - behind) % tp_, .bytes = chunk, .family = family::tp, .group = group});
  }

  int tp_;
  const workload& w_;
  program p_;
  std::int64_t seq_ = 0;
  int groups_ = 0;
};

}  // namespace detail

/// One step (forward and backward of every micro-batch) of a tp group.
inline std::vector<program> tensor_parallel_step(const settings& s, const resolved_settings& r,
                                                 const workload& w) {
  const int tp = s.tensor_model_parallel_size;
  const ub::resolved_config& slots = r.tp_comm_overlap_cfg;
  const double t = static_cast<double>(w.tokens());
  const double h = w.hidden, f = w.ffn_hidden;
  // This rank's share of each GEMM's forward flops (SwiGLU: fc1 is h x 2 ffn).
  const double qkv = 2 * t * h * 3 * h / tp, proj = 2 * t * h * h / tp;
  const double fc1 = 2 * t * h * 2 * f / tp, fc2 = 2 * t * f * h / tp;
  const double core = 2 * t * w.seq_length * h / tp;
  std::vector<program> step;
  for (int rank = 0; rank < tp; ++rank) {
    detail::tp_builder b(rank, tp, w);
    for (int mb = 0; mb < w.micro_batches; ++mb) {
      for (int layer = 0; layer < w.layers; ++layer) {
        const std::string at = "_l" + std::to_string(layer) + "_mb" + std::to_string(mb);
        b.all_gather_gemm(slots.qkv_fprop, "qkv_fprop" + at, qkv);
        b.gemm("attn_core" + at, core);
        b.gemm_reduce_scatter(slots.proj_fprop, "proj_fprop" + at, proj);
        b.all_gather_gemm(slots.fc1_fprop, "fc1_fprop" + at, fc1);
        b.gemm_reduce_scatter(slots.fc2_fprop, "fc2_fprop" + at, fc2);
      }
      for (int layer = w.layers - 1; layer >= 0; --layer) {
        const std::string at = "_l" + std::to_string(layer) + "_mb" + std::to_string(mb);
        b.all_gather_gemm(slots.fc2_dgrad, "fc2_dgrad" + at, fc2);
        b.gemm("fc2_wgrad" + at, fc2);
        b.column_backward(slots.fc1_wgrad, slots.fc1_dgrad, "fc1" + at, fc1);
        b.all_gather_gemm(slots.proj_dgrad, "proj_dgrad" + at, proj);
        b.gemm("proj_wgrad" + at, proj);
        b.gemm("attn_core_bwd" + at, 2 * core);
        b.column_backward(slots.qkv_wgrad, slots.qkv_dgrad, "qkv" + at, qkv);
      }
    }
    step.push_back(b.take());
  }
  return step;
}

}  // namespace overlap::schedule
