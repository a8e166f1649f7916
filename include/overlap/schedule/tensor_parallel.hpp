#pragma once
/// @file
/// The TP family's builder: the GEMM slots of a transformer layer on one rank of a
/// tensor-parallel group with sequence parallelism. Each slot uses the method `cfg::resolved`
/// gives it:
/// - ring_exchange on an all-gather slot: the GEMM runs chunk by chunk, the local chunk first,
///   while the next chunk arrives from the previous rank (one send/recv group per ring step); on a
///   reduce-scatter slot: each partial chunk goes to its owner as soon as it is computed, and the
///   owner sums the chunks;
/// - pipeline (reduce-scatter slots): the GEMM is split into `num_splits` and each chunk is
///   reduce-scattered on the tp stream as soon as it is computed;
/// - bulk (dgrad/wgrad slots): the collective runs on the tp stream next to the GEMM that does
///   not need it;
/// - none (TP overlap off): all-gather, GEMM and reduce-scatter in sequence on the compute stream.
/// The composed step (step.hpp) places these layers in the pipeline and data-parallel schedule.

#include <cstdint>
#include <string>
#include <vector>

#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/program.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/ub.hpp>

namespace overlap::schedule {

namespace detail {

/// Writes one tp rank's GEMM slots into a program: adds a tp stream and a ring stream next to
/// `compute`, and uses communicator `comm_name` (members `ranks`, this rank at `tp_rank`).
class tp_builder {
 public:
  tp_builder(emitter& e, int compute_stream, const std::string& comm_name,
             const std::vector<int>& ranks, int tp_rank, const workload& w)
      : e_(e), tp_(static_cast<int>(ranks.size())), tp_rank_(tp_rank), w_(w),
        compute(compute_stream), comm(e.add_stream(stream_role::tp_comm, -1)),
        ring(e.add_stream(stream_role::tp_comm, -1)), comm_index_(e.comm(comm_name, ranks)) {}

  /// All-gather the sequence-parallel input, then a GEMM of `flops` (this rank's share).
  void all_gather_gemm(const ub::slot& slot, const std::string& name, double flops) {
    if (slot.method != ub::method::ring_exchange) {
      const bool side = slot.method != ub::method::none;
      if (side) cross(compute, comm);
      collective_on(side ? comm : compute, collective::all_gather, name + "_ag", gathered_bytes(),
                    side ? slot.num_sm : -1);
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
        // The last split has no GEMM left to hide under: TE gives it UB_MAX_SM (32) SMs.
        collective_on(comm, collective::reduce_scatter, name + "_rs" + std::to_string(i),
                      gathered_bytes() / slot.num_splits,
                      i + 1 == slot.num_splits ? last_split_sms : slot.num_sm);
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
    collective_on(comm, collective::all_gather, name + "_input_ag", gathered_bytes(), wgrad_slot.num_sm);
    const int gathered = record(comm);
    gemm(name + "_dgrad", flops);
    cross(compute, comm);
    collective_on(comm, collective::reduce_scatter, name + "_dgrad_rs", gathered_bytes(),
                  dgrad_slot.num_sm);
    wait(compute, gathered);
    gemm(name + "_wgrad", flops);
    cross(comm, compute);
  }

  void gemm(std::string name, double flops) {
    push({.kind = op_kind::compute, .stream = compute, .name = std::move(name), .flops = flops});
  }

  /// The forward of one dense layer (`at` names it): attention, then the SwiGLU MLP.
  void layer_forward(const ub::resolved_config& slots, const std::string& at) {
    attention_forward(slots, at);
    all_gather_gemm(slots.fc1_fprop, "fc1_fprop" + at, fc1());
    gemm_reduce_scatter(slots.fc2_fprop, "fc2_fprop" + at, fc2());
  }
  void attention_forward(const ub::resolved_config& slots, const std::string& at) {
    all_gather_gemm(slots.qkv_fprop, "qkv_fprop" + at, qkv());
    gemm("attn_core" + at, core());
    gemm_reduce_scatter(slots.proj_fprop, "proj_fprop" + at, proj());
  }
  /// The backward of one dense layer: the MLP, then attention.
  void layer_backward(const ub::resolved_config& slots, const std::string& at) {
    all_gather_gemm(slots.fc2_dgrad, "fc2_dgrad" + at, fc2());
    gemm("fc2_wgrad" + at, fc2());
    column_backward(slots.fc1_wgrad, slots.fc1_dgrad, "fc1" + at, fc1());
    attention_backward(slots, at);
  }
  void attention_backward(const ub::resolved_config& slots, const std::string& at) {
    all_gather_gemm(slots.proj_dgrad, "proj_dgrad" + at, proj());
    gemm("proj_wgrad" + at, proj());
    gemm("attn_core_bwd" + at, 2 * core());
    column_backward(slots.qkv_wgrad, slots.qkv_dgrad, "qkv" + at, qkv());
  }

  // This rank's share of each GEMM's forward flops (SwiGLU: fc1 is h x 2 ffn).
  double qkv() const { return 2 * tokens() * h() * 3 * h() / tp_; }
  double proj() const { return 2 * tokens() * h() * h() / tp_; }
  double fc1() const { return 2 * tokens() * h() * 2 * w_.ffn_hidden / tp_; }
  double fc2() const { return 2 * tokens() * w_.ffn_hidden * h() / tp_; }
  double core() const { return 2 * tokens() * w_.seq_length * h() / tp_; }

 private:
  double tokens() const { return static_cast<double>(w_.tokens()); }
  double h() const { return w_.hidden; }

  /// The activations of the whole sequence: what an all-gather produces.
  std::int64_t gathered_bytes() const { return w_.tokens() * w_.hidden * w_.element_bytes(); }

  void push(op o) { e_.push(std::move(o)); }
  int record(int stream) { return e_.record(stream); }
  void wait(int stream, int event) { e_.wait(stream, event); }
  void cross(int from, int to) { e_.cross(from, to); }
  /// `sms`: the slot's num_sm for userbuffer kernels, -1 for a plain NCCL collective.
  void collective_on(int stream, collective c, std::string name, std::int64_t bytes, int sms = -1) {
    push({.kind = op_kind::collective, .stream = stream, .name = std::move(name), .coll = c,
          .comm = comm_index_, .seq = seq_++, .bytes = bytes, .family = family::tp, .sms = sms});
  }
  /// One ring step as an NCCL group: send a chunk `ahead` ranks forward, receive one from `behind`
  /// ranks back. TE moves ring chunks by copy engine (its default), which takes no SMs.
  void exchange(const std::string& name, int ahead, int behind) {
    const int r = tp_rank_, group = e_.new_group();
    const std::int64_t chunk = gathered_bytes() / tp_;
    push({.kind = op_kind::send, .stream = ring, .name = name + "_send", .comm = comm_index_,
          .peer = (r + ahead) % tp_, .bytes = chunk, .family = family::tp, .sms = 0, .group = group});
    push({.kind = op_kind::recv, .stream = ring, .name = name + "_recv", .comm = comm_index_,
          .peer = (r + tp_ - behind) % tp_, .bytes = chunk, .family = family::tp, .sms = 0, .group = group});
  }

  static constexpr int last_split_sms = 32;  ///< TE's UB_MAX_SM

  emitter& e_;
  int tp_, tp_rank_;
  const workload& w_;
  const int compute, comm, ring, comm_index_;
  std::int64_t seq_ = 0;
};

}  // namespace detail

}  // namespace overlap::schedule
