#pragma once
/// @file
/// The derivations (rules of kind D): upstream's defaults computed from the layout. A value the
/// user set always wins over a derived one (upstream PREC-1). `derive` is total: it gives a
/// defined result for every `settings` value, valid or not.

#include <cstdint>
#include <optional>

#include <overlap/rules/facts.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap {

namespace detail {

/// TP-5 / TE-6: each slot's final method and knobs; all `none` while TP overlap is off.
constexpr ub::resolved_config resolve_tp_slots(const settings& s, bool tp_comm_overlap) {
  ub::resolved_config out{};
  if (!tp_comm_overlap) return out;
  const ub::user_config declared = s.tp_comm_overlap_cfg.value_or(ub::user_config{});
  for (const ub::slot_id id : ub::all_slots) {
    if (declared.slots[id]) {
      out[id] = *declared.slots[id];
      continue;
    }
    out[id] = ub::default_knobs(ub::default_method(id));
  }
  // TE-2: a dgrad slot that is not bulk becomes a reduce-scatter slot and takes its wgrad's place.
  const auto empty_wgrad_of = [&](ub::slot_id dgrad, ub::slot_id wgrad) {
    if (!declared.slots[wgrad] && out[dgrad].method != ub::method::bulk) out[wgrad] = ub::slot{};
  };
  empty_wgrad_of(ub::slot_id::qkv_dgrad, ub::slot_id::qkv_wgrad);
  empty_wgrad_of(ub::slot_id::fc1_dgrad, ub::slot_id::fc1_wgrad);
  return out;
}

/// ENV-6: CUDA_DEVICE_MAX_CONNECTIONS unless the user pinned it.
constexpr int derived_max_connections(const settings& s, bool ep_overlap) {
  const bool deep_or_hybrid =
      rules::uses_flex_backend(s, flex_backend::deepep) || rules::uses_flex_backend(s, flex_backend::hybridep);
  if (rules::blackwell(s)) return 32;
  if ((rules::tp(s) > 1 || rules::cp(s) > 1) && !ep_overlap) return 1;
  return deep_or_hybrid ? 32 : 8;
}

}  // namespace detail

/// Derived bucket size of DP-1: 128 Mi parameters.
inline constexpr std::int64_t distributed_optimizer_bucket_size = 134'217'728;

/// Resolves every upstream output field of `s` (rules TP-5, TE-6, PP-1..3, PP-12, DP-1..3,
/// DP-13, DP-19, EP-13, ENV-6).
constexpr resolved_settings derive(const settings& s) {
  resolved_settings r{};

  r.tp_comm_overlap = rules::user_true(s.tp_comm_overlap);
  r.sequence_parallel = s.sequence_parallel;
  r.tp_comm_overlap_cfg = detail::resolve_tp_slots(s, r.tp_comm_overlap);

  // PP-1 / PP-2 / PP-3.
  const bool pipelined = rules::pp(s) > 1;
  r.overlap_p2p_comm = s.overlap_p2p_comm.value_or(pipelined && rules::interleaved(s));
  r.batch_p2p_comm = s.batch_p2p_comm.value_or(pipelined && !rules::interleaved(s));
  // PP-12 (0 rather than upstream Bridge's -1, which PP-15 would then reject).
  r.defer_embedding_wgrad_compute = rules::user_true(s.defer_embedding_wgrad_compute);
  r.wgrad_deferral_limit = s.wgrad_deferral_limit.value_or(0);

  // DP-1 / DP-2 / DP-3: only the distributed optimizer with dp > 1 turns DP overlap on.
  const bool dp_derived = s.distributed_optimizer && rules::dp(s) > 1;
  r.overlap_grad_reduce = s.overlap_grad_reduce.value_or(dp_derived);
  r.overlap_param_gather = s.overlap_param_gather.value_or(dp_derived);
  r.overlap_param_gather_with_optimizer_step = s.overlap_param_gather_with_optimizer_step.value_or(false);
  r.align_param_gather = s.align_param_gather.value_or(dp_derived && rules::interleaved(s));
  r.num_buckets = s.num_buckets;
  if (s.bucket_size) {
    r.bucket_size = s.bucket_size;
  } else if (s.num_buckets) {
    r.bucket_size = std::nullopt;
  } else if (dp_derived) {
    r.bucket_size = distributed_optimizer_bucket_size;
  } else if (r.overlap_grad_reduce) {  // DP-13
    const std::int64_t per_rank = 1'000'000 * std::int64_t{rules::dp(s)};
    r.bucket_size = per_rank > 40'000'000 ? per_rank : 40'000'000;
  }

  // EP-13.
  r.overlap_moe_expert_parallel_comm = rules::user_true(s.overlap_moe_expert_parallel_comm);
  r.delay_wgrad_compute = rules::user_true(s.delay_wgrad_compute);
  r.moe_shared_expert_overlap = s.moe_shared_expert_overlap;

  // ENV-6 and DP-19.
  r.cuda_device_max_connections =
      s.cuda_device_max_connections.value_or(detail::derived_max_connections(s, r.overlap_moe_expert_parallel_comm));
  if (s.layernorm_sm_margin) {
    r.nvte_fwd_layernorm_sm_margin = r.nvte_bwd_layernorm_sm_margin = s.layernorm_sm_margin;
  } else if (r.overlap_grad_reduce || r.overlap_param_gather) {
    r.nvte_fwd_layernorm_sm_margin = r.nvte_bwd_layernorm_sm_margin = 16;
  }
  return r;
}

}  // namespace overlap
