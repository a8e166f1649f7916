#pragma once
/// @file
/// Integer options. Domains are OPT-3's.

#include <cstdint>

#include <overlap/config/option.hpp>

namespace overlap {

/// Number of routed experts (>= 1); absent means a dense model. ep must divide it (L-4).
template <int N>
struct num_moe_experts : detail::value_option<&settings::num_moe_experts, N> {};
/// FFN size of the shared experts (>= 1); absent means none. Needed by moe_shared_expert_overlap (SE-5).
template <int N>
struct moe_shared_expert_intermediate_size : detail::value_option<&settings::moe_shared_expert_intermediate_size, N> {};
/// Multi-token-prediction layers (>= 0); EP overlap supports at most 1 (EP-12).
template <int N>
struct mtp_num_layers : detail::value_option<&settings::mtp_num_layers, N> {};
/// Layers per recompute unit (>= 1). Excludes EP overlap (EP-9).
template <int N>
struct recompute_num_layers : detail::value_option<&settings::recompute_num_layers, N> {};
/// DP bucket size in parameters (>= 1). Excludes num_buckets (DP-12); derived by DP-1 / DP-13.
template <std::int64_t N>
struct bucket_size : detail::value_option<&settings::bucket_size, N> {};
/// Number of DP buckets (>= 1). Excludes bucket_size (DP-12).
template <int N>
struct num_buckets : detail::value_option<&settings::num_buckets, N> {};
/// How many micro-batches the embedding wgrad may be deferred (default 0); must be >= 0 (PP-15).
template <int N>
struct wgrad_deferral_limit : detail::value_option<&settings::wgrad_deferral_limit, N> {};
/// Pins CUDA_DEVICE_MAX_CONNECTIONS (1..32); otherwise derived (ENV-6). Must be 1 with TP/CP on a
/// pre-Blackwell GPU without EP overlap (ENV-1).
template <int N>
struct cuda_device_max_connections : detail::value_option<&settings::cuda_device_max_connections, N> {};
/// SMs reserved from TE's persistent LayerNorm for DP collectives (>= 0); otherwise derived (DP-19).
template <int N>
struct layernorm_sm_margin : detail::value_option<&settings::layernorm_sm_margin, N> {};

}  // namespace overlap
