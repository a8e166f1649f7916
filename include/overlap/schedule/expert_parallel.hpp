#pragma once
/// @file
/// The EP family's builder: MoE layers on one rank of an expert-parallel group. A layer is
/// attention, the token dispatch (all-to-all), the experts, and the combine (all-to-all); the
/// backward runs them in reverse.
///
/// Without `overlap_moe_expert_parallel_comm` every micro-batch runs forward then backward on the
/// compute stream and each all-to-all is exposed. With it (Megatron-Core's combined 1F1B) the
/// forward of one micro-batch runs layer by layer against the backward of another, in
/// upstream's per-layer issue order, so that each all-to-all of one runs under the other's
/// compute: combine_B || attn_F, dispatch_F || mlp_B, dispatch_B || (mlp_W +) mlp_F,
/// combine_F || attn_B. `delay_wgrad_compute` splits the expert weight gradient (mlp_W) out of
/// mlp_B into the phase where the backward dispatch runs, and the attention weight gradient
/// (attn_W) out of attn_B to the end of the layer. Attention itself is the caller's (whole, or
/// tensor-parallel GEMM slots): see `whole_attention`. The composed step (step.hpp) pairs the
/// micro-batches.

#include <cstdint>
#include <string>
#include <vector>

#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/program.hpp>
#include <overlap/schedule/workload.hpp>

namespace overlap::schedule {

namespace detail {

/// Forward flops of the routed experts of one MoE layer on one rank, whose `tp` ranks share the
/// micro-batch's tokens (sequence parallel): top_k SwiGLU experts (3 h x ffn matrices) per token.
inline double moe_expert_flops(const workload& w, int tp) {
  return 2 * static_cast<double>(w.tokens()) / tp * w.top_k * 3 * w.hidden * w.moe_ffn_hidden;
}

/// Attention on one GPU (no tensor parallelism): one op forward, one backward, and with
/// `delay_wgrad_compute` the weight gradient split out of the backward.
class whole_attention {
 public:
  whole_attention(emitter& e, int compute_stream, const workload& w, bool delay_wgrad)
      : e_(e), compute_(compute_stream), delay_(delay_wgrad) {
    const double t = static_cast<double>(w.tokens()), h = w.hidden;
    flops_ = 2 * t * 4 * h * h + 2 * t * w.seq_length * h;
  }
  void forward(const std::string& at) { e_.compute(compute_, "attn_F" + at, flops_); }
  void backward(const std::string& at) { e_.compute(compute_, "attn_B" + at, (delay_ ? 1 : 2) * flops_); }
  void wgrad(const std::string& at) {
    if (delay_) e_.compute(compute_, "attn_W" + at, flops_);
  }

 private:
  emitter& e_;
  int compute_;
  bool delay_;
  double flops_ = 0;
};

/// Writes one ep rank's MoE layers into a program: adds an ep stream next to `compute` and uses
/// communicator `comm_name` (members `ranks`). `tp` ranks share a micro-batch's tokens (sequence
/// parallel), so each dispatches and computes a 1/tp share.
class ep_builder {
 public:
  ep_builder(emitter& e, int compute_stream, const std::string& comm_name,
             const std::vector<int>& ranks, const workload& w, int tp, bool delay_wgrad)
      : e_(e), delay_(delay_wgrad), compute(compute_stream),
        ep_stream(e.add_stream(stream_role::ep_comm, -1)), comm_index_(e.comm(comm_name, ranks)) {
    experts_ = moe_expert_flops(w, tp);
    tokens_bytes_ = w.tokens() / tp * w.top_k * w.hidden * w.element_bytes();
  }

  /// A phase of one micro-batch's chain: it waits for the chain's previous phase (on the other
  /// stream) and becomes the chain's last record. `chain_event` is that chain's last record.
  void comm_in_chain(int& chain_event, const std::string& name) {
    if (chain_event >= 0) e_.wait(ep_stream, chain_event);
    push({.kind = op_kind::collective, .stream = ep_stream, .name = name,
          .coll = collective::all_to_all, .comm = comm_index_, .seq = seq_++, .bytes = tokens_bytes_,
          .family = family::ep});
    chain_event = record(ep_stream);
  }
  /// The compute phase of a chain (`work` issues it on the compute stream); see `comm_in_chain`.
  template <class Work>
  void work_in_chain(int& chain_event, Work&& work) {
    if (chain_event >= 0) e_.wait(compute, chain_event);
    work();
    chain_event = record(compute);
  }

  /// The forward of layer `fl` for micro-batch f and the backward of layer `bl` for micro-batch
  /// b, in upstream's per-layer issue order; either may be absent (-1).
  template <class Attention>
  void layer(Attention& attention, int fl, int f, int bl, int b) {
    const std::string fat = "_l" + std::to_string(fl) + "_mb" + std::to_string(f);
    const std::string bat = "_l" + std::to_string(bl) + "_mb" + std::to_string(b);
    const double mlp_b = delay_ ? experts_ : 2 * experts_;
    if (b >= 0) comm_in_chain(chain_b_, "combine_B" + bat);
    if (f >= 0) work_in_chain(chain_f_, [&] { attention.forward(fat); });
    if (b >= 0) work_in_chain(chain_b_, [&] { e_.compute(compute, "mlp_B" + bat, mlp_b); });
    if (f >= 0) comm_in_chain(chain_f_, "dispatch_F" + fat);
    if (b >= 0 && delay_) e_.compute(compute, "mlp_W" + bat, experts_);
    if (b >= 0) comm_in_chain(chain_b_, "dispatch_B" + bat);
    if (f >= 0) work_in_chain(chain_f_, [&] { e_.compute(compute, "mlp_F" + fat, experts_); });
    if (f >= 0) comm_in_chain(chain_f_, "combine_F" + fat);
    if (b >= 0) work_in_chain(chain_b_, [&] { attention.backward(bat); });
    if (b >= 0) attention.wgrad(bat);
  }

  /// Starts a new pair of chains (a new forward and backward micro-batch).
  void reset_chains() { chain_f_ = chain_b_ = -1; }

  /// The step ends when the ep stream has drained too.
  void finish() { e_.cross(ep_stream, compute); }

 private:
  void push(op o) { e_.push(std::move(o)); }
  int record(int stream) { return e_.record(stream); }

  emitter& e_;
  bool delay_;
  const int compute, ep_stream, comm_index_;
  double experts_ = 0;
  std::int64_t tokens_bytes_ = 0;
  std::int64_t seq_ = 0;
  int chain_f_ = -1, chain_b_ = -1;
};

}  // namespace detail

}  // namespace overlap::schedule
