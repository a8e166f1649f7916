#pragma once
/// @file
/// The TP family's builder: the GEMMs of a transformer layer's attention and MLP on one rank of a
/// tensor-parallel group with sequence parallelism (tp 1: the same GEMMs with no communication).
/// Each GEMM slot uses the method `cfg::resolved` gives it:
/// - ring_exchange on an all-gather slot: the GEMM runs chunk by chunk, the local chunk first,
///   while the next chunk arrives from the previous rank (one send/recv group per ring step); on a
///   reduce-scatter slot: each partial chunk goes to its owner as soon as it is computed, and the
///   owner sums the chunks;
/// - pipeline (reduce-scatter slots): the GEMM is split into `num_splits` and each chunk is
///   reduce-scattered on the tp stream as soon as it is computed;
/// - bulk (dgrad/wgrad slots): the collective runs on the tp stream next to the GEMM that does
///   not need it;
/// - none (TP overlap off): all-gather, GEMM and reduce-scatter in sequence on the compute stream.
/// A multi-token-prediction layer's projection runs as `none`.
/// Every op declares its buffers: the layer's input and output activations (and gradients), the
/// layer's parameters and gradients, and its intermediates (gathered inputs, ring chunks, partial
/// outputs), so the verifier checks the data flow of every slot.

#include <cstdint>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/layout.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/ub.hpp>

namespace overlap::schedule::detail {

/// Tensors of the local tokens that the residual add and the norm before a module move (add: read
/// 2, write 1; norm: read 1, write 1), and their backwards (norm: read x and the gradient, write
/// one; the residual gradient's add: read 2, write 1).
inline constexpr std::int64_t add_norm_tensors = 5, add_norm_backward_tensors = 6;

/// What selective activation recompute repeats before a layer's backward: core attention and the
/// dense MLP as ops of their own; the norms ("layernorm") inside the backward of the GEMM that reads
/// them, as TE's LayerNormLinear fuses them (their bytes move with that GEMM's module).
struct selective_recompute {
  bool core_attention = false, mlp = false, layernorm = false;
  bool mla_up_proj = false;  ///< MLA's up projections and their rotary embedding ("mla_up_proj")
};

class tp_builder {
 public:
  /// `tp_group` holds this rank at `tp_rank` (one rank: no communication, no extra streams).
  tp_builder(emitter& e, int compute_stream, const group& tp_group, int tp_rank, const workload& w, int element_bytes,
             const ub::resolved_config& slots, selective_recompute recompute = {})
      : e_(e),
        tp_(static_cast<int>(tp_group.ranks.size())),
        tp_rank_(tp_rank),
        w_(w),
        slots_(slots),
        element_bytes_(element_bytes),
        selective_(recompute),
        compute_(compute_stream),
        comm_stream_(tp_ > 1 ? e.add_stream(stream_role::tp_comm, -1) : compute_stream),
        ring_(tp_ > 1 ? e.add_stream(stream_role::tp_comm, -1) : compute_stream),
        comm_(tp_ > 1 ? e.comm(tp_group.name, tp_group.ranks) : -1) {
    if (tp_ == 1) return;
      // Transformer Engine's initialize_ub gives every overlapped slot a buffer of the whole
      // sequence's hidden state, [seq_length x micro_batch_size, hidden_size] (TP-12).
#define OVERLAP_UB_BUFFER(name)               \
  if (slots_.name.method != ub::method::none) \
    e_.buffer({.kind = buffer_kind::userbuffer, .of = op_type::name}, whole(w_.hidden_size));
    OVERLAP_UB_SLOTS(OVERLAP_UB_BUFFER)
#undef OVERLAP_UB_BUFFER
  }

  /// The buffer `attention_forward` returns: the attention's output, the MLP's input.
  int attention_output(int l, int mb) { return scattered_output(op_type::proj_fprop, {.layer = l, .micro_batch = mb}); }

  /// Attention forward of layer `l` for micro-batch `mb` from `in`; returns the output buffer.
  int attention_forward(int l, int mb, int in, bool recompute = false) {
    recompute_ = recompute;
    const location at{.layer = l, .micro_batch = mb};
    const int qkv = all_gather_gemm(op_type::qkv_fprop, slots_.qkv_fprop, at, in, gemm(w_.qkv_parameters()));
    const int core = ws(op_type::attn_core_fprop, at);
    attention_core(op_type::attn_core_fprop, at, {qkv}, {core});
    return gemm_reduce_scatter(op_type::proj_fprop, slots_.proj_fprop, at, core, gemm(w_.proj_parameters()));
  }
  /// The dense MLP forward of layer `l`: fc1 from `in`, fc2 into `out`.
  void mlp_forward(int l, int mb, int in, int out, bool recompute = false) {
    recompute_ = recompute;
    const location at{.layer = l, .micro_batch = mb};
    const int fc1 = all_gather_gemm(op_type::fc1_fprop, slots_.fc1_fprop, at, in, gemm(w_.fc1_parameters()));
    gemm_reduce_scatter(op_type::fc2_fprop, slots_.fc2_fprop, at, fc1, gemm(w_.fc2_parameters()), out);
  }
  /// The dense MLP backward of layer `l`: from the gradient `grad` of its output, with `saved`
  /// its input; returns the gradient of that input.
  int mlp_backward(int l, int mb, int grad, int saved) {
    const location at{.layer = l, .micro_batch = mb};
    recompute_ = true;
    if (selective_.mlp) all_gather_gemm(op_type::fc1_fprop, slots_.fc1_fprop, at, saved, gemm(w_.fc1_parameters()));
    recompute_ = false;
    const double fc2 = gemm(w_.fc2_parameters()), fc1 = gemm(w_.fc1_parameters());
    const int gathered = gathered_input(op_type::fc2_dgrad, at, grad, slots_.fc2_dgrad);
    const int fc2_dgrad = all_gather_gemm(op_type::fc2_dgrad, slots_.fc2_dgrad, at, grad, fc2, gathered);
    weight_gradient(op_type::fc2_wgrad, at, {gathered, ws(op_type::fc1_fprop, at)}, -1);
    return column_backward(op_type::fc1_wgrad, op_type::fc1_dgrad, slots_.fc1_wgrad, slots_.fc1_dgrad, at, fc2_dgrad,
                           saved, fc1, false, -1);
  }
  /// The attention backward of layer `l` from `grad`, with `saved` the layer input, into `out`
  /// (the input's gradient). `defer_wgrad` holds the weight gradients back for `attention_wgrad`.
  void attention_backward(int l, int mb, int grad, int saved, int out, bool defer_wgrad = false) {
    const location at{.layer = l, .micro_batch = mb};
    recompute_ = true;
    if (selective_.mla_up_proj) up_projections_again(at, saved);
    if (selective_.core_attention)
      attention_core(op_type::attn_core_fprop, at, {ws(op_type::qkv_fprop, at)}, {ws(op_type::attn_core_fprop, at)});
    recompute_ = false;
    const double proj = gemm(w_.proj_parameters());
    const int gathered = gathered_input(op_type::proj_dgrad, at, grad, slots_.proj_dgrad);
    const int proj_dgrad = all_gather_gemm(op_type::proj_dgrad, slots_.proj_dgrad, at, grad, proj, gathered);
    weight_gradient(op_type::proj_wgrad, at, {gathered, ws(op_type::attn_core_fprop, at)}, -1, defer_wgrad);
    const int core = ws(op_type::attn_core_bprop, at);
    attention_core(op_type::attn_core_bprop, at, {proj_dgrad, ws(op_type::qkv_fprop, at)}, {core});
    column_backward(op_type::qkv_wgrad, op_type::qkv_dgrad, slots_.qkv_wgrad, slots_.qkv_dgrad, at, core, saved,
                    gemm(w_.qkv_parameters()), defer_wgrad, out);
  }
  /// A multi-token-prediction layer's projection (Core's eh_proj) forward: the embedding of the
  /// tokens one ahead and the hidden state `in`, each normed, side by side (2 x hidden) projected
  /// to hidden into `out`. Column-parallel: its input gathered over the sequence, its output over
  /// the hidden dimension (then cut back to this rank's part of the sequence, which moves
  /// nothing). No userbuffer slot serves it: the collectives run in line on the compute stream.
  void mtp_projection_forward(location at, int in, int out) {
    const double flops = gemm(w_.mtp_projection_parameters());
    if (tp_ == 1) {
      gemm_op(op_type::mtp_proj_fprop, at, flops, {in}, out);
      return;
    }
    const int gathered = gathered_input(op_type::mtp_proj_fprop, at, in, unoverlapped),
              part = ws(op_type::mtp_proj_fprop, at);
    collective(compute_, collective::all_gather, op_type::mtp_proj_fprop, at, gathered_bytes(op_type::mtp_proj_fprop),
               in, gathered);
    gemm_op(op_type::mtp_proj_fprop, at, flops, {gathered}, part);
    collective(compute_, collective::all_gather, op_type::mtp_proj_fprop, at,
               w_.tokens() * w_.hidden_size * element_bytes_, part, out);
  }
  /// Its backward from `grad`, the gradient of `out`, with `saved` the forward's input: the
  /// gradient gathered over the sequence (its hidden-dimension split moves nothing), then the
  /// column-parallel backward into `out`, the gradient of `saved` (the norms' and the
  /// embedding's backward with its input gradient GEMM).
  void mtp_projection_backward(location at, int grad, int saved, int out) {
    int gathered = grad;
    if (tp_ > 1) {
      gathered = ws(op_type::mtp_proj_dgrad, at);
      collective(compute_, collective::all_gather, op_type::mtp_proj_dgrad, at,
                 w_.tokens() * w_.hidden_size * element_bytes_, grad, gathered);
    }
    column_backward(op_type::mtp_proj_wgrad, op_type::mtp_proj_dgrad, unoverlapped, unoverlapped, at, gathered, saved,
                    gemm(w_.mtp_projection_parameters()), false, out);
  }

  /// The weight gradients `attention_backward` held back (delay_wgrad_compute); a bulk dgrad
  /// reduce-scatter left running runs under them, and the compute stream takes it back after.
  void attention_wgrad() {
    for (const deferred& d : deferred_) {
      if (d.event >= 0) e_.wait(compute_, d.event);
      weight_gradient(d.type, d.at, d.reads, -1);
    }
    deferred_.clear();
    if (comm_running_) e_.cross(comm_stream_, compute_);
    comm_running_ = false;
  }

 private:
  struct deferred {
    op_type type;
    location at;
    std::vector<int> reads;
    int event;
  };

  double gemm(std::int64_t parameters) const { return w_.gemm_flops(parameters) / tp_; }
  /// The tensors a recomputed norm moves (read its input, write its output), or none.
  std::int64_t norm_again() const { return selective_.layernorm ? 2 : 0; }
  int ws(op_type of, location at) {
    return e_.buffer({.kind = buffer_kind::workspace, .of = of, .at = at}, at.split >= 0 ? 0 : workspace_bytes(of));
  }
  /// Bytes of a tensor `width` wide over the whole sequence of the micro-batch, or over this
  /// rank's part of it (sequence parallel).
  std::int64_t whole(std::int64_t width) const { return w_.tokens() * width * element_bytes_; }
  std::int64_t local(std::int64_t width) const { return w_.tokens() / tp_ * width * element_bytes_; }
  /// Bytes of `elements` of GEMM `gemm`'s input that Transformer Engine's module keeps for its
  /// weight gradient: in the step's precision, or quantized as the GEMM takes it (fp8: a byte;
  /// NVFP4: half a byte and an fp8 scale per 16).
  std::int64_t saved_input(op_type gemm, std::int64_t elements) const {
    switch (e_.format_of(gemm)) {
      case gemm_format::fp8: return elements;
      case gemm_format::fp4: return elements / 2 + elements / 16;
      case gemm_format::native: break;
    }
    return elements * element_bytes_;
  }
  /// What the output of op type `of` takes (a split's part lives in its slot's userbuffer), with
  /// what Transformer Engine's module keeps beside it for the backward:
  /// - qkv_fprop: q, k and v of this rank's heads (`qkv_output_width`), and the norm's output that
  ///   LayerNormLinear keeps (this rank's tokens) for the weight gradient;
  /// - attn_core_fprop: the attention's output and the softmax's log-sum-exp per row and head
  ///   (fp32), which flash attention keeps instead of the scores; quantized, the projection keeps
  ///   its own copy of that output;
  /// - fc1_fprop: fc1's output (2 ffn, the SwiGLU's input), the SwiGLU's (fc2's input) and the
  ///   norm's output; fc2_dgrad: the gradient of fc1's output;
  /// - proj_fprop, fc2_fprop, qkv_dgrad, fc1_dgrad, mtp_proj_dgrad: a row-parallel output's partial
  ///   sums (or a gathered gradient), the whole sequence's hidden state;
  /// - mtp_proj_fprop: this rank's columns of the projection, and its two normed inputs.
  std::int64_t workspace_bytes(op_type of) const {
    const std::int64_t h = w_.hidden_size, f = w_.ffn_hidden_size / tp_, t = w_.tokens();
    switch (of) {
      case op_type::qkv_fprop: return whole(w_.qkv_output_width() / tp_) + saved_input(op_type::qkv_fprop, t / tp_ * h);
      case op_type::attn_core_fprop: {
        const std::int64_t out = t * (w_.attention_output_width() / tp_);
        return out * element_bytes_ + t * w_.num_attention_heads / tp_ * 4 +
               (e_.format_of(op_type::proj_fprop) == gemm_format::native ? 0 : saved_input(op_type::proj_fprop, out));
      }
      case op_type::attn_core_bprop: return whole(w_.qkv_output_width() / tp_);
      case op_type::proj_dgrad: return whole(w_.attention_output_width() / tp_);
      case op_type::fc1_fprop:
        return whole(2 * f) + saved_input(op_type::fc2_fprop, t * f) + saved_input(op_type::fc1_fprop, t / tp_ * h);
      case op_type::fc2_dgrad: return whole(2 * f);
      case op_type::mtp_proj_fprop: return whole(h / tp_) + local(2 * h);
      default: return whole(h);
    }
  }
  int params(op_type type, int l) { return e_.buffer(parameters(weights_of(type), l)); }
  int grads(op_type type, int l) { return e_.buffer(gradients(weights_of(type), l)); }
  op_key key(op_type type, location at, op_type slot = op_type::none) const {
    return {.type = type, .slot = slot, .at = at, .recompute = recompute_};
  }
  /// Core attention on this rank's heads over the whole sequence (causal). FlashAttention's
  /// convention: the backward is 2.5 forwards (five matmuls to two, QK^T again). The problem's
  /// head size is the mean of the query/key and value widths (MLA's differ), which gives its flops.
  void attention_core(op_type type, location at, std::vector<int> reads, std::vector<int> writes) {
    const double forward = w_.attention_core_flops() / tp_;
    const gemm_shape shape{w_.seq_length, w_.seq_length, (w_.query_head_dim() + w_.value_head_dim()) / 2,
                           std::int64_t{w_.micro_batch_size} * w_.num_attention_heads / tp_};
    e_.compute(compute_, key(type, at), type == op_type::attn_core_bprop ? 2.5 * forward : forward, std::move(reads),
               std::move(writes), 0, shape);
  }
  /// The GEMM `type` on this rank over the whole micro-batch: forward m x k (tokens x input
  /// features) times k x n; its dgrad multiplies by the transposed weight, its wgrad the
  /// transposed input by the output gradient. MLA's qkv slot is its four projections as one GEMM
  /// of their summed flops: the hidden state times a weight of as many columns as its parameters
  /// over hidden_size.
  gemm_shape shape_of(op_type type) const {
    const std::int64_t t = w_.tokens(), h = w_.hidden_size, f = w_.ffn_hidden_size;
    const op_type weights = weights_of(type);
    const std::int64_t qkv =
        w_.multi_latent_attention ? (w_.qkv_parameters() + h * tp_ - 1) / (h * tp_) : w_.qkv_parameters() / h / tp_;
    const gemm_shape fwd = weights == op_type::qkv_fprop        ? gemm_shape{t, qkv, h}
                           : weights == op_type::proj_fprop     ? gemm_shape{t, h, w_.attention_output_width() / tp_}
                           : weights == op_type::mtp_proj_fprop ? gemm_shape{t, h / tp_, 2 * h}
                           : weights == op_type::fc1_fprop      ? gemm_shape{t, 2 * f / tp_, h}
                                                                : gemm_shape{t, h, f / tp_};
    if (type == weights) return fwd;
    const bool wgrad = type == op_type::qkv_wgrad || type == op_type::proj_wgrad || type == op_type::fc1_wgrad ||
                       type == op_type::fc2_wgrad || type == op_type::mtp_proj_wgrad;
    return wgrad ? gemm_shape{fwd.k, fwd.n, fwd.m} : gemm_shape{fwd.m, fwd.k, fwd.n};
  }
  /// The bytes the memory-bound kernels of GEMM `type`'s module move, which run before or after
  /// its GEMM (bf16 tensors of the local tokens; sequence-parallel parts on 1/tp of them):
  /// - qkv_fprop, fc1_fprop: the residual add and the norm (`add_norm_tensors`) that TE's
  ///   LayerNormLinear runs before its all-gather; qkv also the rotary embedding of q and k (read
  ///   and write);
  /// - fc2_fprop: the SwiGLU between fc1 and fc2 (read 2 f, write f);
  /// - fc2_dgrad: the SwiGLU's backward (read the gradient and the saved 2 f, write 2 f);
  /// - fc1_dgrad, qkv_dgrad: their backwards (`add_norm_backward_tensors`); qkv also the rotary
  ///   backward; with the norms recomputed, their forward again (read 1, write 1);
  /// - mtp_proj_fprop: the embedding lookup (read and write), the two norms (read and write each)
  ///   and the concatenation (read 2, write 2); mtp_proj_dgrad: the norms' backwards (3 each)
  ///   and the embedding's gradient (read the gradient, add into the rows: 3).
  std::int64_t module_bytes(op_type type) const {
    const std::int64_t t = w_.tokens(), local = t / tp_, h = w_.hidden_size, f = w_.ffn_hidden_size / tp_;
    const std::int64_t rope = 2 * t * w_.rotary_width() / tp_;
    std::int64_t elements = 0;
    switch (type) {
      case op_type::qkv_fprop: elements = add_norm_tensors * local * h + rope; break;
      case op_type::fc1_fprop: elements = add_norm_tensors * local * h; break;
      case op_type::fc2_fprop: elements = 3 * t * f; break;
      case op_type::fc2_dgrad: elements = 5 * t * f; break;
      case op_type::fc1_dgrad: elements = (add_norm_backward_tensors + norm_again()) * local * h; break;
      case op_type::qkv_dgrad: elements = (add_norm_backward_tensors + norm_again()) * local * h + rope; break;
      case op_type::mtp_proj_fprop: elements = 10 * local * h; break;
      case op_type::mtp_proj_dgrad: elements = 9 * local * h; break;
      default: break;
    }
    return elements * element_bytes_;
  }
  /// A GEMM of layer `at.layer`'s weights (reads them too); `flops` below the whole GEMM's is a
  /// chunk of its tokens (ring step, pipelined split). The module's memory-bound kernels
  /// (`module_bytes`) go with the first chunk.
  void gemm_op(op_type type, location at, double flops, std::vector<int> reads, int out) {
    reads.push_back(params(type, at.layer));
    gemm_shape shape = shape_of(type);
    const double whole =
        2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k);
    const auto parts = static_cast<std::int64_t>(whole / flops + 0.5);
    (shape.m == w_.tokens() ? shape.m : shape.k) /= parts > 1 ? parts : 1;
    e_.gemm(compute_, key(type, at), shape, std::move(reads), {out}, at.split <= 0 ? module_bytes(type) : 0);
  }
  void weight_gradient(op_type type, location at, std::vector<int> reads, int event, bool defer = false) {
    if (defer) {
      deferred_.push_back({type, at, std::move(reads), event});
      return;
    }
    reads.push_back(grads(type, at.layer));
    e_.gemm(compute_, key(type, at), shape_of(type), std::move(reads), {grads(type, at.layer)});
  }
  /// What the all-gather of GEMM `type`'s slot produces, and its reduce-scatter consumes: the
  /// whole sequence of the hidden state, or of MLA's latents around the qkv slot.
  std::int64_t gathered_bytes(op_type type) const {
    const op_type weights = weights_of(type);
    const std::int64_t width = weights == op_type::qkv_fprop        ? w_.qkv_gathered_width()
                               : weights == op_type::mtp_proj_fprop ? 2 * std::int64_t{w_.hidden_size}
                                                                    : w_.hidden_size;
    return w_.tokens() * width * element_bytes_;
  }
  /// MLA's up projections again from the latents the forward gathered (`saved` with tp 1), with
  /// the rotary embedding they feed, before the backward that needs their output (recompute
  /// "mla_up_proj"): one GEMM of their flops over the latents' width.
  void up_projections_again(location at, int saved) {
    const std::int64_t latent = w_.qkv_gathered_width();
    const gemm_shape shape{w_.tokens(), (w_.mla_up_parameters() + latent * tp_ - 1) / (latent * tp_), latent};
    const int input = tp_ > 1 ? gathered_input(op_type::qkv_fprop, at, saved, slots_.qkv_fprop) : saved;
    e_.gemm(compute_, key(op_type::qkv_fprop, at), shape, {input, params(op_type::qkv_fprop, at.layer)},
            {ws(op_type::qkv_fprop, at)}, 2 * w_.tokens() * w_.rotary_width() / tp_ * element_bytes_);
  }
  /// The buffer a slot's all-gather writes (or its input with tp 1): inside the userbuffer of
  /// `served` where it is overlapped, else a tensor of its own; also the qkv slot's latents that
  /// the recompute of MLA's up projections reads again, which outlive the userbuffer's next use.
  int gathered_input(op_type slot, location at, int in, const ub::slot& served) {
    if (tp_ == 1) return in;
    const bool own = served.method == ub::method::none || (slot == op_type::qkv_fprop && selective_.mla_up_proj);
    return e_.buffer({.kind = buffer_kind::gathered, .of = slot, .at = at}, own ? gathered_bytes(slot) : 0);
  }
  /// The output of a reduce-scatter: this rank's tokens of the hidden state.
  int scattered_output(op_type slot, location at) {
    return e_.buffer({.kind = buffer_kind::scattered, .of = slot, .at = at}, local(w_.hidden_size));
  }
  void collective(int stream, collective c, op_type slot, location at, std::int64_t bytes, int in, int out,
                  int sms = -1) {
    const op_type type = c == collective::all_gather ? op_type::tp_all_gather : op_type::tp_reduce_scatter;
    e_.collective(stream, key(type, at, slot), c, comm_, bytes, {in}, {out}, sms);
  }

 public:
  /// All-gather `in`, then the GEMM `type` on the whole sequence; returns its output. `gathered`
  /// is where the all-gather writes (-1: the slot's own workspace).
  int all_gather_gemm(op_type type, const ub::slot& slot, location at, int in, double flops, int gathered = -1) {
    const int out = ws(type, at);
    if (tp_ == 1) {
      gemm_op(type, at, flops, {in}, out);
      return out;
    }
    if (gathered < 0) gathered = gathered_input(type, at, in, slot);
    if (slot.method != ub::method::ring_exchange) {
      const bool side = slot.method != ub::method::none;
      const int stream = side ? comm_stream_ : compute_;
      e_.cross(compute_, stream);
      collective(stream, collective::all_gather, type, at, gathered_bytes(type), in, gathered, side ? slot.num_sm : -1);
      e_.cross(stream, compute_);
      gemm_op(type, at, flops, {gathered}, out);
      return out;
    }
    // Step i multiplies the chunk at hand (the local one first) while passing it on and receiving
    // the next, which also lands in the gathered tensor (what TE's userbuffer holds for a later
    // weight gradient). The ring stream starts after `in` is written: it sends `in` first.
    e_.cross(compute_, ring_);
    int chunk = in;
    for (int i = 0; i < tp_; ++i) {
      location step = at;
      step.split = i;
      gemm_op(type, step, flops / tp_, {chunk}, out);
      if (i + 1 == tp_) break;
      const int next = e_.buffer({.kind = buffer_kind::ring_chunk, .of = type, .at = step});
      exchange(type, step, 1, 1, chunk, {next, gathered});
      e_.cross(ring_, compute_);
      chunk = next;
    }
    return out;
  }

  /// The GEMM `type` on `in`, then its output reduce-scattered back to sequence-parallel form
  /// into `out` (-1: the slot's own workspace); returns `out`.
  int gemm_reduce_scatter(op_type type, const ub::slot& slot, location at, int in, double flops, int out = -1) {
    if (out < 0) out = scattered_output(type, at);
    if (tp_ == 1) {
      gemm_op(type, at, flops, {in}, out);
      return out;
    }
    const auto partial = [&](int i) {
      location step = at;
      step.split = i;
      return std::make_pair(step, ws(type, step));
    };
    if (slot.method == ub::method::ring_exchange) {
      // Chunk i is computed for rank (r + i + 1) and sent to it; the last one is this rank's own.
      std::vector<int> received;
      for (int i = 0; i < tp_; ++i) {
        const auto [step, part] = partial(i);
        gemm_op(type, step, flops / tp_, {in}, part);
        if (i + 1 == tp_) {
          received.push_back(part);
          break;
        }
        e_.cross(compute_, ring_);
        received.push_back(e_.buffer({.kind = buffer_kind::ring_chunk, .of = type, .at = step}));
        exchange(type, step, i + 1, i + 1, part, {received.back()});
      }
      e_.cross(ring_, compute_);
      e_.compute(compute_, key(op_type::tp_ring_reduce, at, type), 0, std::move(received), {out},
                 (tp_ + 1) * gathered_bytes(type) / tp_);
      return out;
    }
    if (slot.method == ub::method::pipeline) {
      for (int i = 0; i < slot.num_splits; ++i) {
        const auto [step, part] = partial(i);
        gemm_op(type, step, flops / slot.num_splits, {in}, part);
        e_.cross(compute_, comm_stream_);
        // The last split has no GEMM left to hide under: TE gives it UB_MAX_SM (32) SMs.
        collective(comm_stream_, collective::reduce_scatter, type, step, gathered_bytes(type) / slot.num_splits, part,
                   out, i + 1 == slot.num_splits ? last_split_sms : slot.num_sm);
      }
      e_.cross(comm_stream_, compute_);
      return out;
    }
    const int part = ws(type, at);
    gemm_op(type, at, flops, {in}, part);
    collective(compute_, collective::reduce_scatter, type, at, gathered_bytes(type), part, out);
    return out;
  }

 private:
  /// The backward of a column-parallel GEMM (qkv, fc1) from `grad`, the gradient of its output,
  /// with `saved` its input: the wgrad slot all-gathers the saved input under the dgrad GEMM, the
  /// dgrad slot reduce-scatters the dgrad output under the wgrad GEMM (bulk). A dgrad slot that is
  /// not bulk is a reduce-scatter slot of its own, and the input is gathered for the weight
  /// gradient beside it. Returns the gradient of the input (written to `out`, or to
  /// the slot's own buffer when -1).
  int column_backward(op_type wgrad, op_type dgrad, const ub::slot& wgrad_slot, const ub::slot& dgrad_slot, location at,
                      int grad, int saved, double flops, bool defer, int out) {
    const bool bulk = tp_ > 1 && dgrad_slot.method == ub::method::bulk && wgrad_slot.method != ub::method::none;
    // Gathered by the wgrad slot's userbuffer in bulk, else by NCCL into a tensor of its own.
    const int input = gathered_input(wgrad, at, saved, bulk ? wgrad_slot : unoverlapped);
    if (!bulk) {
      // With TP overlap on, the input is gathered asynchronously under the dgrad GEMM, as TE does
      // outside userbuffers; with it off, in sequence.
      const bool async = tp_ > 1 && dgrad_slot.method != ub::method::none;
      int gathered = -1;
      if (async) {
        e_.cross(compute_, comm_stream_);
        collective(comm_stream_, collective::all_gather, wgrad, at, gathered_bytes(wgrad), saved, input);
        gathered = e_.record(comm_stream_);
      }
      out = gemm_reduce_scatter(dgrad, dgrad_slot, at, grad, flops, out);
      if (tp_ > 1 && !async)
        collective(compute_, collective::all_gather, wgrad, at, gathered_bytes(wgrad), saved, input);
      if (gathered >= 0 && !defer) e_.wait(compute_, gathered);
      weight_gradient(wgrad, at, {input, grad}, defer ? gathered : -1, defer);
      return out;
    }
    if (out < 0) out = scattered_output(dgrad, at);
    const int dgrad_out = ws(dgrad, at);
    e_.cross(compute_, comm_stream_);
    collective(comm_stream_, collective::all_gather, wgrad, at, gathered_bytes(wgrad), saved, input, wgrad_slot.num_sm);
    const int gathered = e_.record(comm_stream_);
    gemm_op(dgrad, at, flops, {grad}, dgrad_out);
    e_.cross(compute_, comm_stream_);
    collective(comm_stream_, collective::reduce_scatter, dgrad, at, gathered_bytes(dgrad), dgrad_out, out,
               dgrad_slot.num_sm);
    if (defer) {  // the reduce-scatter runs on under the deferred weight gradients
      weight_gradient(wgrad, at, {input, grad}, gathered, true);
      comm_running_ = true;
      return out;
    }
    e_.wait(compute_, gathered);
    weight_gradient(wgrad, at, {input, grad}, -1);
    e_.cross(comm_stream_, compute_);
    return out;
  }

  /// One ring step as an NCCL group: send `from` `ahead` ranks forward, receive `into` from
  /// `behind` ranks back. TE moves ring chunks by copy engine (its default), which takes no SMs.
  void exchange(op_type slot, location at, int ahead, int behind, int from, std::vector<int> into) {
    const int group = e_.new_group();
    const std::int64_t chunk = gathered_bytes(slot) / tp_;
    e_.p2p(op_kind::send, ring_, key(op_type::tp_ring_send, at, slot), comm_, (tp_rank_ + ahead) % tp_, chunk, {from},
           group, 0);
    e_.p2p(op_kind::recv, ring_, key(op_type::tp_ring_recv, at, slot), comm_, (tp_rank_ + tp_ - behind) % tp_, chunk,
           std::move(into), group, 0);
  }

  static constexpr int last_split_sms = 32;  ///< TE's UB_MAX_SM
  static constexpr ub::slot unoverlapped{};  ///< a GEMM no userbuffer slot serves

  emitter& e_;
  int tp_, tp_rank_;
  const workload& w_;
  const ub::resolved_config& slots_;
  int element_bytes_;
  selective_recompute selective_;
  int compute_, comm_stream_, ring_, comm_;
  bool recompute_ = false;
  bool comm_running_ = false;  ///< a deferred layer's dgrad reduce-scatter the compute stream has not waited for
  std::vector<deferred> deferred_;
};

}  // namespace overlap::schedule::detail
