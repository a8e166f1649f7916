#pragma once
/// @file
/// The field lists of the plain values, written once: Boost.Hana struct reflection on
/// `settings`, `resolved_settings`, `ub::slot` and `version`, and `for_each_field` over them.
/// The printer (print.hpp) and the overlap-plan reader and writer walk these lists, so a field is
/// named in its struct and here, nowhere else. Not included by <overlap/overlap.hpp>: the
/// umbrella's compile time does not pay for it.

#include <cstddef>
#include <string_view>
#include <type_traits>

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <boost/hana/core/to.hpp>

#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>
#include <overlap/settings/ub.hpp>
#include <overlap/settings/version.hpp>

// Declaration order, as in the structs (the printer and the writers keep it).
BOOST_HANA_ADAPT_STRUCT(overlap::settings,
  tensor_model_parallel_size, pipeline_model_parallel_size, virtual_pipeline_model_parallel_size,
  context_parallel_size, data_parallel_size, expert_model_parallel_size, expert_tensor_parallel_size,
  sequence_parallel, distributed_optimizer, overlap_p2p_comm_warmup_flush, use_dist_ckpt,
  moe_shared_expert_overlap, ep_overlap_early_attn_memory_release,
  overlap_dispatch_backward_with_experts_wgrad, moe_pad_expert_input_to_capacity,
  gradient_accumulation_fusion, add_bias_linear, add_qkv_bias, fp8, fp8_param_gather,
  grad_reduce_in_fp32,
  tp_comm_overlap, overlap_p2p_comm, batch_p2p_comm, overlap_grad_reduce, overlap_param_gather,
  overlap_param_gather_with_optimizer_step, align_param_gather, defer_embedding_wgrad_compute,
  overlap_moe_expert_parallel_comm, delay_wgrad_compute,
  num_moe_experts, moe_shared_expert_intermediate_size, mtp_num_layers, recompute_num_layers,
  bucket_size, num_buckets, wgrad_deferral_limit, cuda_device_max_connections, layernorm_sm_margin,
  moe_token_dispatcher_type, moe_flex_dispatcher_backend, precision, recompute_granularity,
  recompute_method, cuda_graph_impl, gpu, tp_comm_bootstrap_backend, recompute_modules,
  cuda_graph_modules, te_version, tp_comm_overlap_cfg);

BOOST_HANA_ADAPT_STRUCT(overlap::resolved_settings,
  tp_comm_overlap, sequence_parallel, overlap_p2p_comm, batch_p2p_comm, overlap_grad_reduce,
  overlap_param_gather, overlap_param_gather_with_optimizer_step, align_param_gather, bucket_size,
  num_buckets, defer_embedding_wgrad_compute, wgrad_deferral_limit,
  overlap_moe_expert_parallel_comm, delay_wgrad_compute, moe_shared_expert_overlap,
  tp_comm_overlap_cfg, cuda_device_max_connections, nvte_fwd_layernorm_sm_margin,
  nvte_bwd_layernorm_sm_margin);

BOOST_HANA_ADAPT_STRUCT(overlap::ub::slot,
  method, num_sm, cga_size, num_splits, set_sm_margin, aggregate, fp8_buf, atomic_gemm);

BOOST_HANA_ADAPT_STRUCT(overlap::version, major, minor, patch);

namespace overlap::reflect {

/// Calls `f(name, member)` for each field of `object` (a reflected struct), in declaration order;
/// `name` is a `std::string_view`, `member` a reference with the constness of `object`.
template <class T, class F>
constexpr void for_each_field(T& object, F&& f) {
  using plain = std::remove_const_t<T>;
  boost::hana::for_each(boost::hana::accessors<plain>(), [&](auto pair) {
    constexpr std::remove_cvref_t<decltype(boost::hana::first(pair))> key{};
    f(std::string_view{boost::hana::to<const char*>(key)}, boost::hana::second(pair)(object));
  });
}

/// The number of reflected fields of `T`.
template <class T>
inline constexpr std::size_t field_count = decltype(boost::hana::length(boost::hana::accessors<T>()))::value;

/// The first environment field of `resolved_settings`: it and every field after it are
/// environment variables, named like the field in upper case.
inline constexpr std::string_view first_environment_field = "cuda_device_max_connections";

}  // namespace overlap::reflect
