#pragma once
/// @file
/// Boolean options: `name<>` is true, `name<false>` an explicit false. An absent flag keeps
/// upstream's default, or is derived where the rule table has a D rule for it (docs/rules.md).

#include <overlap/config/option.hpp>

#define OVERLAP_FLAG(name) \
  template <bool V = true> \
  struct name : detail::value_option<&settings::name, V> {};

namespace overlap {

/// Sequence parallelism. Needs tp > 1 (TP-9); tp_comm_overlap needs it (TP-2).
OVERLAP_FLAG(sequence_parallel)
/// The distributed optimizer. With dp > 1 it turns on grad-reduce and param-gather overlap (DP-1);
/// overlap_param_gather needs it (DP-8).
OVERLAP_FLAG(distributed_optimizer)
/// TP communication/GEMM overlap (userbuffers). Needs tp >= 2 (TP-1) and sequence_parallel (TP-2).
OVERLAP_FLAG(tp_comm_overlap)
/// Overlap PP send/recv with compute. Derived (PP-1..3); needs vpp (PP-6); excludes batch_p2p_comm
/// (PP-5); no effect with pp == 1 (PP-16).
OVERLAP_FLAG(overlap_p2p_comm)
/// Group PP send/recv into one batch. Derived (PP-1..3); excludes overlap_p2p_comm (PP-5); no
/// effect with pp == 1 (PP-16).
OVERLAP_FLAG(batch_p2p_comm)
/// Overlap p2p in warm-up and flush too. Needs overlap_p2p_comm without batch_p2p_comm (PP-10).
OVERLAP_FLAG(overlap_p2p_comm_warmup_flush)
/// Overlap gradient reduction with backward. Derived (DP-1, DP-3); needs dp x cp > 1 (DP-21).
OVERLAP_FLAG(overlap_grad_reduce)
/// Overlap parameter all-gather with forward. Derived (DP-1); needs distributed_optimizer (DP-8) and
/// overlap_grad_reduce (DP-9); needs dp x cp > 1 (DP-21).
OVERLAP_FLAG(overlap_param_gather)
/// Overlap the param all-gather with the optimizer step. Needs distributed_optimizer,
/// overlap_param_gather and vpp, excludes use_dist_ckpt (DP-10).
OVERLAP_FLAG(overlap_param_gather_with_optimizer_step)
/// Align param all-gathers across virtual chunks. Derived (DP-2); needs overlap_param_gather and vpp
/// (DP-22).
OVERLAP_FLAG(align_param_gather)
/// Distributed checkpointing. Excludes overlap_param_gather_with_optimizer_step (DP-10).
OVERLAP_FLAG(use_dist_ckpt)
/// Defer the embedding weight gradient into the pipeline bubble. Needs pp > 1 (PP-13),
/// gradient_accumulation_fusion (PP-14), wgrad_deferral_limit >= 0 (PP-15).
OVERLAP_FLAG(defer_embedding_wgrad_compute)
/// MoE expert-parallel all-to-all overlap (combined 1F1B). Needs ep > 1 (EP-1), the alltoall or flex
/// dispatcher (EP-3), bf16/fp16 (EP-4), vpp when pp > 1 (EP-6), no full recompute (EP-7..10), no
/// shared-expert overlap (EP-11), at most one MTP layer (EP-12), no TE graphs on moe/mlp (EP-15).
OVERLAP_FLAG(overlap_moe_expert_parallel_comm)
/// Delay the expert weight-gradient compute under the backward dispatch. Needs EP overlap (WG-6) and
/// a recent enough TE (WG-1, WG-2, WG-4a, WG-7); CUDA-graph constraints WG-4b, WG-4c.
OVERLAP_FLAG(delay_wgrad_compute)
/// Overlap the shared experts with the dispatcher. Needs shared experts (SE-5) and the alltoall or
/// flex dispatcher (SE-1); excludes EP overlap (EP-11) and recompute of shared_experts (SE-2).
OVERLAP_FLAG(moe_shared_expert_overlap)
/// Release attention memory early under EP overlap. Needs overlap_moe_expert_parallel_comm (EP-16).
OVERLAP_FLAG(ep_overlap_early_attn_memory_release)
/// Overlap the dispatch backward with expert wgrad. Excludes EP overlap and delay_wgrad_compute,
/// needs TE >= 2.3.0 (EP-17).
OVERLAP_FLAG(overlap_dispatch_backward_with_experts_wgrad)
/// Pad expert inputs to capacity. Not with the flex dispatcher on deepep (FX-10).
OVERLAP_FLAG(moe_pad_expert_input_to_capacity)
/// Fused gradient accumulation (default false). Needed by PP-14 and WG-4b.
OVERLAP_FLAG(gradient_accumulation_fusion)
/// Bias in linear layers (default true). Conflicts with delayed wgrad in attn CUDA graphs (WG-4c).
OVERLAP_FLAG(add_bias_linear)
/// Bias in the QKV projection (default false). Conflicts as add_bias_linear (WG-4c).
OVERLAP_FLAG(add_qkv_bias)
/// FP8 GEMMs. Needed by atomic GEMMs (TE-3) and fp8_param_gather (MP-1).
OVERLAP_FLAG(fp8)
/// FP4 GEMMs (Transformer Engine's NVFP4 recipe: Megatron-Core's fp4 / fp4_recipe). Blackwell.
OVERLAP_FLAG(fp4)
/// Gather parameters in FP8. Needs fp8 (MP-1).
OVERLAP_FLAG(fp8_param_gather)
/// Reduce gradients in fp32.
OVERLAP_FLAG(grad_reduce_in_fp32)

}  // namespace overlap

#undef OVERLAP_FLAG
