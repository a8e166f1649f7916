#pragma once
/// @file
/// `overlap::settings`: what the user set, one field per option, named like the option (sizes
/// by their long names). An absent option leaves its field at upstream's default, or empty
/// where derivation may fill it (see `resolved_settings`).

#include <cstdint>
#include <optional>

#include <overlap/settings/enum_set.hpp>
#include <overlap/settings/enums.hpp>
#include <overlap/settings/ub.hpp>
#include <overlap/settings/version.hpp>

namespace overlap {

struct settings {
  // Layout. Empty expert_tensor_parallel_size means "same as tensor_model_parallel_size".
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  std::optional<int> virtual_pipeline_model_parallel_size{};
  int context_parallel_size = 1;
  int data_parallel_size = 1;
  int expert_model_parallel_size = 1;
  std::optional<int> expert_tensor_parallel_size{};

  // Flags that derivation never fills: upstream's default when absent.
  bool sequence_parallel = false;
  bool distributed_optimizer = false;
  bool overlap_p2p_comm_warmup_flush = false;
  bool use_dist_ckpt = false;
  bool moe_shared_expert_overlap = false;
  bool ep_overlap_early_attn_memory_release = false;
  bool overlap_dispatch_backward_with_experts_wgrad = false;
  bool moe_pad_expert_input_to_capacity = false;
  bool gradient_accumulation_fusion = false;
  bool add_bias_linear = true;
  bool add_qkv_bias = false;
  bool fp8 = false;
  bool fp4 = false;
  bool fp8_param_gather = false;
  bool grad_reduce_in_fp32 = false;

  // Flags that derivation can fill: empty when the user did not set them.
  std::optional<bool> tp_comm_overlap{};
  std::optional<bool> overlap_p2p_comm{};
  std::optional<bool> batch_p2p_comm{};
  std::optional<bool> overlap_grad_reduce{};
  std::optional<bool> overlap_param_gather{};
  std::optional<bool> overlap_param_gather_with_optimizer_step{};
  std::optional<bool> align_param_gather{};
  std::optional<bool> defer_embedding_wgrad_compute{};
  std::optional<bool> overlap_moe_expert_parallel_comm{};
  std::optional<bool> delay_wgrad_compute{};

  // Integers.
  std::optional<int> num_moe_experts{};
  std::optional<int> moe_shared_expert_intermediate_size{};
  std::optional<int> mtp_num_layers{};
  std::optional<int> recompute_num_layers{};
  std::optional<std::int64_t> bucket_size{};  ///< a parameter count
  std::optional<int> num_buckets{};
  std::optional<int> wgrad_deferral_limit{};
  std::optional<int> cuda_device_max_connections{};
  std::optional<int> layernorm_sm_margin{};

  // Enums and lists.
  dispatcher moe_token_dispatcher_type = dispatcher::allgather;
  std::optional<flex_backend> moe_flex_dispatcher_backend{};
  dtype precision = dtype::fp32;
  std::optional<granularity> recompute_granularity{};
  std::optional<recompute> recompute_method{};
  graph_impl cuda_graph_impl = graph_impl::none;
  std::optional<gpu_model> gpu{};
  bootstrap tp_comm_bootstrap_backend = bootstrap::nccl;
  enum_set<module> recompute_modules{};
  enum_set<graph_module> cuda_graph_modules{};

  std::optional<version> te_version{};
  std::optional<ub::user_config> tp_comm_overlap_cfg{};

  friend constexpr bool operator==(const settings&, const settings&) = default;
};

}  // namespace overlap
