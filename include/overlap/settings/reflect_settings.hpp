#pragma once
/// @file
/// Boost.Hana struct reflection of `overlap::settings`, in declaration order: the overlap-plan
/// reader and writer walk it, so each field is named in settings.hpp and here, nowhere else. Not
/// included by <overlap/overlap.hpp>.

#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include <overlap/settings/enum_set.hpp>
#include <overlap/settings/reflect.hpp>
#include <overlap/settings/settings.hpp>

BOOST_HANA_ADAPT_STRUCT(overlap::settings, tensor_model_parallel_size, pipeline_model_parallel_size,
                        virtual_pipeline_model_parallel_size, context_parallel_size, data_parallel_size,
                        expert_model_parallel_size, expert_tensor_parallel_size, sequence_parallel,
                        distributed_optimizer, overlap_p2p_comm_warmup_flush, use_dist_ckpt, moe_shared_expert_overlap,
                        ep_overlap_early_attn_memory_release, overlap_dispatch_backward_with_experts_wgrad,
                        moe_pad_expert_input_to_capacity, gradient_accumulation_fusion, add_bias_linear, add_qkv_bias,
                        fp8, fp4, fp8_param_gather, grad_reduce_in_fp32, tp_comm_overlap, overlap_p2p_comm,
                        batch_p2p_comm, overlap_grad_reduce, overlap_param_gather,
                        overlap_param_gather_with_optimizer_step, align_param_gather, defer_embedding_wgrad_compute,
                        overlap_moe_expert_parallel_comm, delay_wgrad_compute, num_moe_experts,
                        moe_shared_expert_intermediate_size, mtp_num_layers, recompute_num_layers, bucket_size,
                        num_buckets, wgrad_deferral_limit, cuda_device_max_connections, layernorm_sm_margin,
                        moe_token_dispatcher_type, moe_flex_dispatcher_backend, precision, recompute_granularity,
                        recompute_method, cuda_graph_impl, gpu, tp_comm_bootstrap_backend, recompute_modules,
                        cuda_graph_modules, te_version, tp_comm_overlap_cfg);

namespace overlap::reflect {

/// Which settings fields are optional values, and which are sets of enum members (`element`).
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_enum_set : std::false_type {};
template <class E>
struct is_enum_set<enum_set<E>> : std::true_type {
  using element = E;
};

/// The settings fields whose values differ between `a` and `b`, in declaration order.
inline std::vector<std::string_view> changed_fields(const settings& a, const settings& b) {
  std::vector<std::string_view> out;
  for_each_field_pair(a, b, [&](std::string_view name, const auto& x, const auto& y) {
    if (!(x == y)) out.push_back(name);
  });
  return out;
}

}  // namespace overlap::reflect
