#pragma once
/// @file
/// The EP family's builder: MoE layers on one rank of an expert-parallel group (one rank: the
/// same layer without the all-to-alls). A layer is attention, the router, the permutation of the
/// tokens to their experts, the token dispatch (all-to-all), the experts, the combine
/// (all-to-all) and the unpermutation; shared experts, where the settings have them, run on the
/// un-dispatched tokens beside the routed ones. The backward runs them in reverse, each
/// all-to-all in the other direction.
///
/// Without `overlap_moe_expert_parallel_comm` every micro-batch runs forward then backward and
/// each all-to-all is exposed. With it (Megatron-Core's combined 1F1B) the forward of one
/// micro-batch runs layer by layer against the backward of another, in upstream's per-layer
/// issue order, so that each all-to-all of one runs under the other's compute: combine_bprop ||
/// attention forward, dispatch || expert dgrad, dispatch_bprop || (expert wgrad +) expert
/// forward, combine || attention backward. `delay_wgrad_compute` moves the expert weight gradient
/// out of the expert backward into the phase where the backward dispatch runs, and the attention
/// weight gradients to the end of the layer. `ep_overlap_early_attn_memory_release` moves the
/// attention backward before the experts' forward (upstream's step 7 for its step 10). The
/// composed step (step.hpp) pairs the micro-batches.

#include <cstdint>
#include <optional>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/layout.hpp>
#include <overlap/schedule/tensor_parallel.hpp>
#include <overlap/schedule/workload.hpp>

namespace overlap::schedule::detail {

/// The MoE sizes of one rank's layers.
struct moe_shape {
  int experts = 0;     ///< routed experts of the model
  int shared_ffn = 0;  ///< moe_shared_expert_intermediate_size (0: none)
  bool delay_wgrad = false;
  /// ep_overlap_early_attn_memory_release: the backward micro-batch's attention backward runs
  /// before the forward one's experts, freeing its attention's tensors sooner; the forward's
  /// combine then has no compute of the other micro-batch to run under.
  bool early_attn_release = false;
  bool recompute_experts = false;     ///< selective recompute of the routed experts ("moe")
  bool recompute_activation = false;  ///< ... of their activation alone ("moe_act"): inside their dgrad
  bool recompute_shared = false;      ///< ... of the shared experts ("shared_experts")
  bool recompute_norm = false;        ///< ... of the norm before the router ("layernorm"): inside its backward
  /// The alltoall dispatcher: the host needs the token counts per expert to size the all-to-all,
  /// so before issuing a dispatch it waits for the router's counts to reach it (upstream: a D2H
  /// copy at `cuda_dtoh_point` and `event.synchronize()` at `cuda_sync_point`, before the
  /// all-to-all). Issue order has to put independent work (the other micro-batch's backward)
  /// before it, or the GPU idles while the host waits.
  bool host_token_counts = false;
};

class moe_builder {
 public:
  /// `ep_group` holds this rank (one rank: no dispatch or combine); `tp` ranks share a
  /// micro-batch's tokens (sequence parallel), so each routes and computes a 1/tp share.
  moe_builder(emitter& e, int compute_stream, const group& ep_group, const workload& w, int tp, int element_bytes,
              moe_shape shape)
      : e_(e),
        shape_(shape),
        ep_(static_cast<int>(ep_group.ranks.size())),
        compute_(compute_stream),
        ep_stream_(ep_ > 1 ? e.add_stream(stream_role::ep_comm, -1) : compute_stream),
        comm_(ep_ > 1 ? e.comm(ep_group.name, ep_group.ranks) : -1) {
    tokens_ = static_cast<double>(w.tokens()) / tp;
    tokens_per_rank_ = w.tokens() / tp;
    hidden_ = w.hidden_size;
    norm_bytes_ = tokens_per_rank_ * hidden_ * element_bytes;
    routed_bytes_ = tokens_per_rank_ * w.moe_router_topk * w.hidden_size * element_bytes;
    // One tensor of the routed rows as wide as an expert's FFN.
    const std::int64_t routed_ffn =
        tokens_per_rank_ * w.moe_router_topk * std::int64_t{w.moe_ffn_hidden_size} * element_bytes;
    // The router's scores (fp32) and the norm's output before it, which its weight gradient reads.
    router_saved_bytes_ = tokens_per_rank_ * shape.experts * 4 + norm_bytes_;
    // Each routed row's fc1 output (2 f, the SwiGLU's input) and the SwiGLU's output (fc2's
    // input); "moe_act" recomputes the latter.
    experts_saved_bytes_ = (shape.recompute_activation ? 2 : 3) * routed_ffn;
    // The shared experts' output, and their fc1 and SwiGLU outputs over the whole sequence (their
    // columns split over tp).
    shared_saved_bytes_ = norm_bytes_ + 3 * w.tokens() * (shape.shared_ffn / tp) * std::int64_t{element_bytes};
    // The SwiGLU of the routed rows again: read fc1's 2 f, write f.
    activation_bytes_ = shape.recompute_activation && !shape.recompute_experts ? 3 * routed_ffn : 0;
    experts_flops_ = 2 * tokens_ * w.moe_router_topk * static_cast<double>(w.expert_parameters(w.moe_ffn_hidden_size));
    // Evenly routed: the rank's tokens x top-k rows spread over its local experts.
    const std::int64_t local_experts = shape.experts / ep_;
    if (local_experts > 0)
      experts_shape_ = {tokens_per_rank_ * w.moe_router_topk / local_experts, w.moe_ffn_hidden_size, hidden_,
                        local_experts};
    shared_flops_ = 2 * tokens_ * static_cast<double>(w.expert_parameters(shape.shared_ffn));
    router_flops_ = 2 * tokens_ * static_cast<double>(w.router_parameters(shape.experts));
  }

  /// The forward of layer `fl` for micro-batch f and the backward of layer `bl` for micro-batch
  /// b, in upstream's per-layer issue order; either may be absent (-1). `tp` writes the attention.
  void layer(tp_builder& tp, int fl, int f, int bl, int b, bool recompute = false) {
    const location fat{.layer = fl, .micro_batch = f}, bat{.layer = bl, .micro_batch = b};
    const bool fwd = f >= 0, bwd = b >= 0;
    recompute_ = recompute;
    if (bwd) {
      work_in_chain(chain_b_, [&] { backward_entry(tp, bat); });
      comm_in_chain(chain_b_, op_type::ep_combine_bprop, bat, tokens(op_type::unpermute_bprop, bat),
                    tokens(op_type::ep_combine_bprop, bat));
    }
    if (fwd) work_in_chain(chain_f_, [&] { forward_entry(tp, fat); });
    if (bwd) work_in_chain(chain_b_, [&] { experts_backward(bat, !shape_.delay_wgrad); });
    if (fwd && ep_ > 1 && shape_.host_token_counts) e_.host_wait(key(op_type::moe_token_count_sync, fat), chain_f_);
    if (fwd)
      comm_in_chain(chain_f_, op_type::ep_dispatch, fat, tokens(op_type::permute_fprop, fat),
                    tokens(op_type::ep_dispatch, fat));
    if (bwd && shape_.delay_wgrad) experts_wgrad(bat);
    if (bwd)
      comm_in_chain(chain_b_, op_type::ep_dispatch_bprop, bat, tokens(op_type::experts_dgrad, bat),
                    tokens(op_type::ep_dispatch_bprop, bat));
    if (bwd && shape_.early_attn_release) work_in_chain(chain_b_, [&] { backward_exit(tp, bat); });
    if (fwd) work_in_chain(chain_f_, [&] { experts_forward(fat); });
    if (fwd)
      comm_in_chain(chain_f_, op_type::ep_combine, fat, tokens(op_type::experts_fprop, fat),
                    tokens(op_type::ep_combine, fat));
    if (bwd && !shape_.early_attn_release) work_in_chain(chain_b_, [&] { backward_exit(tp, bat); });
    if (bwd && shape_.delay_wgrad) tp.attention_wgrad();
    if (fwd) pending_ = fat;
    recompute_ = false;
  }

  /// Issues what the last forward layer still owes (its unpermutation); call before anything
  /// reads the last layer's output, and before a new pair of chains.
  void flush() {
    if (pending_) work_in_chain(chain_f_, [&] { unpermute(*pending_); });
    pending_.reset();
  }
  /// Starts a new pair of chains (a new forward and backward micro-batch).
  void reset_chains() {
    flush();
    chain_f_ = chain_b_ = -1;
  }
  /// The step ends when the ep stream has drained too.
  void finish() {
    flush();
    e_.cross(ep_stream_, compute_);
  }

  /// Parameters of one MoE layer held by this rank: the routed experts' (expert group) and the
  /// dense part beside attention (router and shared experts; the latter split over tp).
  static std::int64_t expert_parameters(const workload& w, const moe_shape& s, int ep, int tp) {
    return std::int64_t{s.experts} / ep * w.expert_parameters(w.moe_ffn_hidden_size) / (ep > 1 ? 1 : tp);
  }
  static std::int64_t dense_parameters(const workload& w, const moe_shape& s, int tp) {
    return w.router_parameters(s.experts) + w.expert_parameters(s.shared_ffn) / tp;
  }

 private:
  op_key key(op_type type, location at) const { return {.type = type, .at = at, .recompute = recompute_}; }
  /// Routed rows of this rank's tokens (top-k of each), spread evenly: as many before and after
  /// an all-to-all.
  int tokens(op_type of, location at) {
    return e_.buffer({.kind = buffer_kind::tokens, .of = of, .at = at}, routed_bytes_);
  }
  int ws(op_type of, location at) {
    const std::int64_t bytes = of == op_type::router_fprop           ? router_saved_bytes_
                               : of == op_type::experts_fprop        ? experts_saved_bytes_
                               : of == op_type::shared_experts_fprop ? shared_saved_bytes_
                                                                     : norm_bytes_;
    return e_.buffer({.kind = buffer_kind::workspace, .of = of, .at = at}, bytes);
  }
  int params(op_type type, location at) {
    return e_.buffer(parameters(weights_of(type), at.layer, weights_of(type) == op_type::experts_fprop && ep_ > 1));
  }
  int grads(op_type type, location at) {
    return e_.buffer(gradients(weights_of(type), at.layer, weights_of(type) == op_type::experts_fprop && ep_ > 1));
  }
  std::int64_t permute_bytes() const { return 2 * routed_bytes_; }

  void compute(op_type type, location at, double flops, std::vector<int> reads, std::vector<int> writes,
               std::int64_t memory = 0) {
    e_.compute(compute_, key(type, at), flops, std::move(reads), std::move(writes), memory);
  }
  /// The routed experts' forward, input gradient or weight gradient: one grouped problem each,
  /// with `memory` bytes of memory-bound kernels beside it.
  void experts(op_type type, location at, std::vector<int> reads, std::vector<int> writes, std::int64_t memory = 0) {
    e_.compute(compute_, key(type, at), experts_flops_, std::move(reads), std::move(writes), memory, experts_shape_);
  }

  /// A phase of one micro-batch's chain: it waits for the chain's previous phase (on the other
  /// stream) and becomes the chain's last record. With one rank there is nothing to send.
  void comm_in_chain(int& chain, op_type type, location at, int in, int out) {
    if (ep_ == 1) return;
    if (chain >= 0) e_.wait(ep_stream_, chain);
    e_.collective(ep_stream_, key(type, at), collective::all_to_all, comm_, routed_bytes_, {in}, {out});
    chain = e_.record(ep_stream_);
  }
  template <class Work>
  void work_in_chain(int& chain, Work&& work) {
    if (chain >= 0 && ep_ > 1) e_.wait(compute_, chain);
    work();
    if (ep_ > 1) chain = e_.record(compute_);
  }

  // What each all-to-all delivers; with one rank, what it would have sent.
  int dispatched(location at) { return tokens(ep_ > 1 ? op_type::ep_dispatch : op_type::permute_fprop, at); }
  int combined(location at) { return tokens(ep_ > 1 ? op_type::ep_combine : op_type::experts_fprop, at); }
  int combined_grad(location at) { return tokens(ep_ > 1 ? op_type::ep_combine_bprop : op_type::unpermute_bprop, at); }
  int dispatched_grad(location at) { return tokens(ep_ > 1 ? op_type::ep_dispatch_bprop : op_type::experts_dgrad, at); }

  void forward_entry(tp_builder& tp, location at) {
    if (pending_) unpermute(*pending_);
    pending_.reset();
    const int attention =
        tp.attention_forward(at.layer, at.micro_batch, e_.buffer(activation(at.layer, at.micro_batch)), recompute_);
    tp_attention_out_ = attention;
    // The router's module: the residual add and the norm before it.
    e_.gemm(compute_, key(op_type::router_fprop, at), {tokens_per_rank_, shape_.experts, hidden_},
            {attention, params(op_type::router_fprop, at)}, {ws(op_type::router_fprop, at)},
            add_norm_tensors * norm_bytes_);
    compute(op_type::permute_fprop, at, 0, {attention, ws(op_type::router_fprop, at)},
            {tokens(op_type::permute_fprop, at)}, permute_bytes());
  }
  void experts_forward(location at) {
    experts(op_type::experts_fprop, at, {dispatched(at), params(op_type::experts_fprop, at)},
            {tokens(op_type::experts_fprop, at), ws(op_type::experts_fprop, at)});
    if (shape_.shared_ffn > 0)
      compute(op_type::shared_experts_fprop, at, shared_flops_,
              {tp_attention_out_, params(op_type::shared_experts_fprop, at)}, {ws(op_type::shared_experts_fprop, at)});
  }
  void unpermute(location at) {
    std::vector<int> reads{combined(at), ws(op_type::router_fprop, at)};
    if (shape_.shared_ffn > 0) reads.push_back(ws(op_type::shared_experts_fprop, at));
    compute(op_type::unpermute_fprop, at, 0, std::move(reads), {e_.buffer(activation(at.layer + 1, at.micro_batch))},
            permute_bytes());
  }

  void backward_entry(tp_builder& tp, location at) {
    const int grad = e_.buffer(activation_grad(at.layer + 1, at.micro_batch));
    compute(op_type::unpermute_bprop, at, 0, {grad}, {tokens(op_type::unpermute_bprop, at)}, permute_bytes());
    if (shape_.shared_ffn > 0 && shape_.recompute_shared) {
      recompute_ = true;
      compute(op_type::shared_experts_fprop, at, shared_flops_,
              {tp.attention_output(at.layer, at.micro_batch), params(op_type::shared_experts_fprop, at)},
              {ws(op_type::shared_experts_fprop, at)});
      recompute_ = false;
    }
    if (shape_.shared_ffn > 0) {
      const int saved = ws(op_type::shared_experts_fprop, at);
      compute(op_type::shared_experts_dgrad, at, shared_flops_,
              {grad, saved, params(op_type::shared_experts_dgrad, at)}, {ws(op_type::shared_experts_dgrad, at)});
      compute(op_type::shared_experts_wgrad, at, shared_flops_, {grad, saved, grads(op_type::shared_experts_wgrad, at)},
              {grads(op_type::shared_experts_wgrad, at)});
    }
  }
  void experts_backward(location at, bool with_wgrad) {
    if (shape_.recompute_experts) {
      recompute_ = true;
      experts_forward(at);
      recompute_ = false;
    }
    const int grad = combined_grad(at);
    experts(op_type::experts_dgrad, at,
            {grad, params(op_type::experts_dgrad, at), dispatched(at), ws(op_type::experts_fprop, at)},
            {tokens(op_type::experts_dgrad, at)}, activation_bytes_);
    if (with_wgrad) experts_wgrad(at);
  }
  void experts_wgrad(location at) {
    experts(op_type::experts_wgrad, at,
            {combined_grad(at), dispatched(at), ws(op_type::experts_fprop, at), grads(op_type::experts_wgrad, at)},
            {grads(op_type::experts_wgrad, at)});
  }
  void backward_exit(tp_builder& tp, location at) {
    const int grad = ws(op_type::permute_bprop, at);
    compute(op_type::permute_bprop, at, 0, {dispatched_grad(at)}, {grad}, permute_bytes());
    // The router's backward runs the norm's backward and the residual gradient's add too.
    compute(op_type::router_bprop, at, 2 * router_flops_,
            {grad, ws(op_type::router_fprop, at), tp.attention_output(at.layer, at.micro_batch),
             grads(op_type::router_bprop, at)},
            {grads(op_type::router_bprop, at)},
            (add_norm_backward_tensors + (shape_.recompute_norm ? 2 : 0)) * norm_bytes_);
    tp.attention_backward(at.layer, at.micro_batch, grad, e_.buffer(activation(at.layer, at.micro_batch)),
                          e_.buffer(activation_grad(at.layer, at.micro_batch)), shape_.delay_wgrad);
  }

  emitter& e_;
  moe_shape shape_;
  int ep_, compute_, ep_stream_, comm_;
  double tokens_ = 0, experts_flops_ = 0, shared_flops_ = 0, router_flops_ = 0;
  gemm_shape experts_shape_{};  ///< the routed experts' grouped problem (program.hpp)
  std::int64_t tokens_per_rank_ = 0, hidden_ = 0;
  std::int64_t routed_bytes_ = 0;
  std::int64_t activation_bytes_ = 0;  ///< the routed SwiGLU recomputed inside the experts' dgrad
  std::int64_t norm_bytes_ = 0;        ///< one tensor of the local tokens
  /// What the router, the routed experts and the shared experts keep for their backward.
  std::int64_t router_saved_bytes_ = 0, experts_saved_bytes_ = 0, shared_saved_bytes_ = 0;
  bool recompute_ = false;
  int chain_f_ = -1, chain_b_ = -1;
  int tp_attention_out_ = -1;
  std::optional<location> pending_{};
};

}  // namespace overlap::schedule::detail
