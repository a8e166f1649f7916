#pragma once
/// @file
/// Enum options, lists and the declared Transformer Engine version.

#include <overlap/config/option.hpp>

namespace overlap {

/// The MoE token dispatcher (default allgather). EP overlap and shared-expert overlap need alltoall
/// or flex (EP-3, SE-1); flex needs a backend (FX-7) and a MoE model (FX-1).
template <dispatcher D>
struct moe_token_dispatcher_type : detail::value_option<&settings::moe_token_dispatcher_type, D> {};
/// The flex dispatcher's backend. Needs the flex dispatcher (FX-11) and a MoE model (FX-1); deepep is
/// not for gb200/gb300 (FX-3) nor with moe_pad_expert_input_to_capacity (FX-10).
template <flex_backend B>
struct moe_flex_dispatcher_backend : detail::value_option<&settings::moe_flex_dispatcher_backend, B> {};
/// The parameter dtype (default fp32). EP overlap needs bf16 or fp16 (EP-4).
template <dtype T>
struct precision : detail::value_option<&settings::precision, T> {};
/// Activation recompute granularity. Full excludes EP overlap (EP-7).
template <granularity G>
struct recompute_granularity : detail::value_option<&settings::recompute_granularity, G> {};
/// Activation recompute method. Excludes EP overlap (EP-8).
template <recompute M>
struct recompute_method : detail::value_option<&settings::recompute_method, M> {};
/// CUDA-graph implementation (default none). See EP-15, WG-4, WG-7.
template <graph_impl G>
struct cuda_graph_impl : detail::value_option<&settings::cuda_graph_impl, G> {};
/// The GPU the run targets; undeclared counts as pre-Blackwell (ENV-1, ENV-6, EP-21).
template <gpu_model G>
struct gpu : detail::value_option<&settings::gpu, G> {};
/// How TP userbuffers bootstrap (default nccl).
template <bootstrap B>
struct tp_comm_bootstrap_backend : detail::value_option<&settings::tp_comm_bootstrap_backend, B> {};

/// Modules to recompute. module::moe excludes EP overlap (EP-10); module::shared_experts excludes
/// moe_shared_expert_overlap under selective recompute (SE-2).
template <module... M>
struct recompute_modules {
  using overlap_field = detail::field_key<&settings::recompute_modules>;
  static constexpr void apply(settings& s) { (s.recompute_modules.insert(M), ...); }
};

/// Modules captured by CUDA graphs (empty: the whole layer). See EP-15 and WG-4.
template <graph_module... M>
struct cuda_graph_modules {
  using overlap_field = detail::field_key<&settings::cuda_graph_modules>;
  static constexpr void apply(settings& s) { (s.cuda_graph_modules.insert(M), ...); }
};

/// The Transformer Engine version a trainer calls; the TE-version rules (EP-17, WG-1, WG-2, WG-4a,
/// WG-7) apply only when it is declared.
template <int Major, int Minor, int Patch>
struct te_version {
  using overlap_field = detail::field_key<&settings::te_version>;
  static constexpr void apply(settings& s) { s.te_version = version{Major, Minor, Patch}; }
};

}  // namespace overlap
