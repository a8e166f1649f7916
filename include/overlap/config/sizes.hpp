#pragma once
/// @file
/// Parallel sizes, under upstream's long names and the short ones. Every size is >= 1 (OPT-3).

#include <overlap/config/option.hpp>

namespace overlap {

/// Tensor-parallel size (default 1). `sequence_parallel` and `tp_comm_overlap` need it > 1 (TP-9, TP-1).
template <int N>
struct tensor_model_parallel_size : detail::value_option<&settings::tensor_model_parallel_size, N> {};
/// Pipeline-parallel size (default 1). `vpp` needs it > 1 (L-2); p2p flags need it > 1 (PP-16).
template <int N>
struct pipeline_model_parallel_size : detail::value_option<&settings::pipeline_model_parallel_size, N> {};
/// Virtual pipeline stages per rank, >= 2 (unset: no interleaving). Needs pp > 1 (L-2); with pp == 2
/// it needs overlap_p2p_comm (PP-8). Turns on overlap_p2p_comm (PP-1) and align_param_gather (DP-2).
template <int N>
struct virtual_pipeline_model_parallel_size : detail::value_option<&settings::virtual_pipeline_model_parallel_size, N> {
};
/// Context-parallel size (default 1).
template <int N>
struct context_parallel_size : detail::value_option<&settings::context_parallel_size, N> {};
/// Data-parallel size (default 1). DP overlap needs dp x cp > 1 (DP-21).
template <int N>
struct data_parallel_size : detail::value_option<&settings::data_parallel_size, N> {};
/// Expert-parallel size (default 1). ep x etp must divide tp x cp x dp (L-3); ep > 1 needs
/// num_moe_experts divisible by ep (L-4); EP overlap needs ep > 1 (EP-1).
template <int N>
struct expert_model_parallel_size : detail::value_option<&settings::expert_model_parallel_size, N> {};
/// Expert tensor-parallel size (default: tp). See L-3.
template <int N>
struct expert_tensor_parallel_size : detail::value_option<&settings::expert_tensor_parallel_size, N> {};

/// Short for `tensor_model_parallel_size<N>`.
template <int N>
struct tp : tensor_model_parallel_size<N> {};
/// Short for `pipeline_model_parallel_size<N>`.
template <int N>
struct pp : pipeline_model_parallel_size<N> {};
/// Short for `virtual_pipeline_model_parallel_size<N>`.
template <int N>
struct vpp : virtual_pipeline_model_parallel_size<N> {};
/// Short for `context_parallel_size<N>`.
template <int N>
struct cp : context_parallel_size<N> {};
/// Short for `data_parallel_size<N>`.
template <int N>
struct dp : data_parallel_size<N> {};
/// Short for `expert_model_parallel_size<N>`.
template <int N>
struct ep : expert_model_parallel_size<N> {};
/// Short for `expert_tensor_parallel_size<N>`.
template <int N>
struct etp : expert_tensor_parallel_size<N> {};

}  // namespace overlap
