#pragma once
/// @file
/// The EP family's generator: one step of an expert-parallel group of MoE layers (no TP/PP/DP
/// composition yet). A layer is attention, the token dispatch (all-to-all), the experts, and the
/// combine (all-to-all); the backward runs them in reverse.
///
/// Without `overlap_moe_expert_parallel_comm` every micro-batch runs forward then backward on the
/// compute stream and each all-to-all is exposed. With it (Megatron-Core's combined 1F1B) the
/// forward of micro-batch i + 1 runs layer by layer against the backward of micro-batch i, in
/// upstream's per-layer issue order, so that each all-to-all of one runs under the other's
/// compute: combine_B || attn_F, dispatch_F || mlp_B, dispatch_B || (mlp_W +) mlp_F,
/// combine_F || attn_B. `delay_wgrad_compute` splits the expert weight gradient (mlp_W) out of
/// mlp_B into the phase where the backward dispatch runs, and the attention weight gradient
/// (attn_W) out of attn_B to the end of the layer.

#include <cstdint>
#include <string>
#include <vector>

#include <overlap/schedule/program.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

namespace detail {

class ep_builder {
 public:
  ep_builder(int rank, int ep, const workload& w, bool delay_wgrad) : w_(w), delay_(delay_wgrad) {
    p_.rank = rank;
    p_.streams = {{stream_role::compute, 0}, {stream_role::ep_comm, -1}};
    p_.comms.push_back({"ep", {}});
    for (int i = 0; i < ep; ++i) p_.comms[0].ranks.push_back(i);
    const double t = static_cast<double>(w.tokens()), h = w.hidden;
    attention_ = 2 * t * 4 * h * h + 2 * t * w.seq_length * h;
    experts_ = 2 * t * w.top_k * 3 * h * w.moe_ffn_hidden;
    tokens_bytes_ = w.tokens() * w.top_k * w.hidden * w.element_bytes();
  }

  /// A phase of one micro-batch's chain: it waits for the chain's previous phase (on the other
  /// stream) and becomes the chain's last record. `chain_event` is that chain's last record.
  void comm_in_chain(int& chain_event, const std::string& name) {
    if (chain_event >= 0) push({.kind = op_kind::wait, .stream = ep_stream, .event = chain_event});
    push({.kind = op_kind::collective, .stream = ep_stream, .name = name,
          .coll = collective::all_to_all, .comm = 0, .seq = seq_++, .bytes = tokens_bytes_,
          .family = family::ep});
    chain_event = record(ep_stream);
  }
  /// The compute phase of a chain; see `comm_in_chain`.
  void work_in_chain(int& chain_event, const std::string& name, double flops) {
    if (chain_event >= 0) push({.kind = op_kind::wait, .stream = compute, .event = chain_event});
    push({.kind = op_kind::compute, .stream = compute, .name = name, .flops = flops});
    chain_event = record(compute);
  }

  /// Layer `l` of a forward (f >= 0) and the backward of layer L - 1 - l (b >= 0), in upstream's
  /// per-layer issue order; either may be absent (-1).
  void layer(int l, int f, int b) {
    const std::string fl = "_l" + std::to_string(l) + "_mb" + std::to_string(f);
    const std::string bl = "_l" + std::to_string(w_.layers - 1 - l) + "_mb" + std::to_string(b);
    const double mlp_b = delay_ ? experts_ : 2 * experts_, attn_b = delay_ ? attention_ : 2 * attention_;
    if (b >= 0) comm_in_chain(chain_b_, "combine_B" + bl);
    if (f >= 0) work_in_chain(chain_f_, "attn_F" + fl, attention_);
    if (b >= 0) work_in_chain(chain_b_, "mlp_B" + bl, mlp_b);
    if (f >= 0) comm_in_chain(chain_f_, "dispatch_F" + fl);
    if (b >= 0 && delay_) compute_only("mlp_W" + bl, experts_);
    if (b >= 0) comm_in_chain(chain_b_, "dispatch_B" + bl);
    if (f >= 0) work_in_chain(chain_f_, "mlp_F" + fl, experts_);
    if (f >= 0) comm_in_chain(chain_f_, "combine_F" + fl);
    if (b >= 0) work_in_chain(chain_b_, "attn_B" + bl, attn_b);
    if (b >= 0 && delay_) compute_only("attn_W" + bl, attention_);
  }

  /// Starts a new pair of chains (a new forward and backward micro-batch).
  void reset_chains() { chain_f_ = chain_b_ = -1; }

  program take() {
    // The step ends when the ep stream has drained too.
    push({.kind = op_kind::wait, .stream = compute, .event = record(ep_stream)});
    return std::move(p_);
  }

 private:
  static constexpr int compute = 0, ep_stream = 1;

  void push(op o) { p_.ops.push_back(std::move(o)); }
  int record(int stream) {
    const int e = p_.num_events++;
    push({.kind = op_kind::record, .stream = stream, .event = e});
    return e;
  }
  void compute_only(const std::string& name, double flops) {
    push({.kind = op_kind::compute, .stream = compute, .name = name, .flops = flops});
  }

  const workload& w_;
  bool delay_;
  program p_;
  double attention_ = 0, experts_ = 0;
  std::int64_t tokens_bytes_ = 0;
  std::int64_t seq_ = 0;
  int chain_f_ = -1, chain_b_ = -1;
};

}  // namespace detail

inline std::vector<program> expert_parallel_step(const settings& s, const resolved_settings& r,
                                                 const workload& w) {
  const int ep = s.expert_model_parallel_size;
  const int m = w.micro_batches;
  std::vector<program> step;
  for (int rank = 0; rank < ep; ++rank) {
    detail::ep_builder b(rank, ep, w, r.delay_wgrad_compute);
    const auto pass = [&](int f, int bwd) {  // one forward and/or one backward micro-batch
      b.reset_chains();
      for (int l = 0; l < w.layers; ++l) b.layer(l, f, bwd);
    };
    if (r.overlap_moe_expert_parallel_comm) {
      pass(0, -1);
      for (int i = 1; i < m; ++i) pass(i, i - 1);
      pass(-1, m - 1);
    } else {
      for (int i = 0; i < m; ++i) {
        pass(i, -1);
        pass(-1, i);
      }
    }
    step.push_back(b.take());
  }
  return step;
}

}  // namespace overlap::schedule
