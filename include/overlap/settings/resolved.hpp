#pragma once
/// @file
/// `overlap::resolved_settings`: the final value of every upstream output field after
/// derivation, named exactly as upstream, plus the environment to set.

#include <cstdint>
#include <optional>

#include <overlap/settings/ub.hpp>

namespace overlap {

struct resolved_settings {
  bool tp_comm_overlap = false;
  bool sequence_parallel = false;
  bool overlap_p2p_comm = false;
  bool batch_p2p_comm = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  bool overlap_param_gather_with_optimizer_step = false;
  bool align_param_gather = false;
  std::optional<std::int64_t> bucket_size{};  ///< a parameter count; empty means one bucket
  std::optional<int> num_buckets{};
  bool defer_embedding_wgrad_compute = false;
  int wgrad_deferral_limit = 0;
  bool overlap_moe_expert_parallel_comm = false;
  bool delay_wgrad_compute = false;
  bool moe_shared_expert_overlap = false;
  ub::resolved_config tp_comm_overlap_cfg{};

  // Environment; empty means "leave the variable alone".
  std::optional<int> cuda_device_max_connections{};
  std::optional<int> nvte_fwd_layernorm_sm_margin{};
  std::optional<int> nvte_bwd_layernorm_sm_margin{};

  friend constexpr bool operator==(const resolved_settings&, const resolved_settings&) = default;
};

}  // namespace overlap
