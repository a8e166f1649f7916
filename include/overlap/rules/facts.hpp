#pragma once
/// @file
/// Named facts about a `settings` value that several rules and derivations share, so each is
/// written once (layout shorthands, GPU generation, shared experts, CUDA-graph scope, ...).

#include <cstdint>
#include <optional>
#include <string_view>

#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::rules {

constexpr int tp(const settings& s) { return s.tensor_model_parallel_size; }
constexpr int pp(const settings& s) { return s.pipeline_model_parallel_size; }
constexpr int cp(const settings& s) { return s.context_parallel_size; }
constexpr int dp(const settings& s) { return s.data_parallel_size; }
constexpr int ep(const settings& s) { return s.expert_model_parallel_size; }
constexpr int etp(const settings& s) { return s.expert_tensor_parallel_size.value_or(s.tensor_model_parallel_size); }
constexpr bool has_vpp(const settings& s) { return s.virtual_pipeline_model_parallel_size.has_value(); }
/// pp > 1 with vpp > 1: the interleaved 1F1B schedule.
constexpr bool interleaved(const settings& s) {
  return pp(s) > 1 && s.virtual_pipeline_model_parallel_size.value_or(1) > 1;
}
/// dp × cp, the ranks a DP overlap would communicate across (no overflow for any int pair).
constexpr std::int64_t dp_cp(const settings& s) { return std::int64_t{dp(s)} * std::int64_t{cp(s)}; }

/// The user wrote `flag<>` (true), as opposed to leaving it out or writing `flag<false>`.
constexpr bool user_true(const std::optional<bool>& flag) { return flag.value_or(false); }

/// A flag upstream ignores, as it runs: unset where the user set it true.
constexpr void drop_if_true(std::optional<bool>& flag) {
  if (user_true(flag)) flag.reset();
}

/// `a` divides `b1 × b2 × b3`, computed without forming the product.
constexpr bool divides_product(std::int64_t a, std::int64_t b1, std::int64_t b2, std::int64_t b3) {
  if (a <= 0 || b1 <= 0 || b2 <= 0 || b3 <= 0) return false;
  const auto gcd = [](std::int64_t x, std::int64_t y) {
    while (y != 0) {
      const std::int64_t rest = x % y;
      x = y;
      y = rest;
    }
    return x;
  };
  a /= gcd(a, b1);
  a /= gcd(a, b2);
  a /= gcd(a, b3);
  return a == 1;
}

/// The most ranks a layout may have (L-5): more than any training run, and few enough that one
/// program per rank can be generated and simulated.
inline constexpr std::int64_t max_world_size = 131'072;
/// The most chunks a ub::pipeline slot may split its GEMM into (TE-8): each split is a GEMM and a
/// reduce-scatter per layer and micro-batch in the generated step.
inline constexpr int max_num_splits = 64;

/// tp × cp × dp × pp, saturated just above `max_world_size` so that no product overflows.
constexpr std::int64_t world_size(const settings& s) {
  std::int64_t world = 1;
  for (const int size : {tp(s), cp(s), dp(s), pp(s)}) {
    if (size <= 0) return 0;
    world = world * size > max_world_size ? max_world_size + 1 : world * size;
  }
  return world;
}

constexpr bool is_moe(const settings& s) { return s.num_moe_experts.has_value(); }
constexpr bool has_shared_experts(const settings& s) { return s.moe_shared_expert_intermediate_size.has_value(); }
constexpr bool alltoall_or_flex(const settings& s) {
  return s.moe_token_dispatcher_type == dispatcher::alltoall || s.moe_token_dispatcher_type == dispatcher::flex;
}
constexpr bool uses_flex_backend(const settings& s, flex_backend b) { return s.moe_flex_dispatcher_backend == b; }

/// A declared Blackwell-class GPU; an undeclared GPU counts as pre-Blackwell (ENV-1, ENV-6, EP-21).
constexpr bool blackwell(const settings& s) {
  if (!s.gpu) return false;
  switch (*s.gpu) {
    case gpu_model::b200:
    case gpu_model::b300:
    case gpu_model::gb200:
    case gpu_model::gb300: return true;
    default: return false;
  }
}

/// WG-4: delayed weight gradients would be captured inside a CUDA graph.
constexpr bool wgrad_in_graph_scope(const settings& s) {
  if (s.cuda_graph_impl == graph_impl::none) return false;
  return s.cuda_graph_modules.contains(graph_module::attn) ||
         (s.cuda_graph_modules.contains(graph_module::moe_router) && has_shared_experts(s) &&
          !s.moe_shared_expert_overlap);
}

/// Some resolved TP userbuffer slot satisfies `pred(slot_id, slot)`.
template <class Pred>
constexpr bool any_slot(const ub::resolved_config& cfg, Pred pred) {
  for (const ub::slot_id id : ub::all_slots)
    if (pred(id, cfg[id])) return true;
  return false;
}

/// TE-4 as Transformer Engine runs it: atomic_gemm off on every declared slot that is ub::bulk.
constexpr void atomic_off_on_bulk(settings& s, const resolved_settings& r) {
  if (!s.tp_comm_overlap_cfg) return;
  for (const ub::slot_id id : ub::all_slots) {
    std::optional<ub::slot>& x = s.tp_comm_overlap_cfg->slots[id];
    if (x && r.tp_comm_overlap_cfg[id].method == ub::method::bulk) x->atomic_gemm = false;
  }
}

/// TE-2: the user declared `dgrad` with a method other than bulk and also declared `wgrad`.
constexpr bool dgrad_not_bulk_with_wgrad(const settings& s, ub::slot_id dgrad, ub::slot_id wgrad) {
  if (!s.tp_comm_overlap_cfg) return false;
  const auto& slots = s.tp_comm_overlap_cfg->slots;
  return slots[wgrad].has_value() && slots[dgrad].has_value() && slots[dgrad]->method != ub::method::bulk;
}

/// TE-5: a slot that runs an atomic ring-exchange GEMM.
constexpr bool atomic_ring(const ub::slot& x) { return x.method == ub::method::ring_exchange && x.atomic_gemm; }

/// The oldest Transformer Engine that `delay_wgrad_compute` works with here: 2.7.0 (WG-2), 2.8.0
/// with overlapped grad reduction (WG-1), 2.10.0 with TE CUDA graphs (WG-7), 2.12.0 with weight
/// gradients inside a CUDA graph (WG-4a). Only the highest applicable floor is reported.
constexpr version delay_wgrad_te_floor(const settings& s, bool overlap_grad_reduce) {
  if (wgrad_in_graph_scope(s)) return version{2, 12, 0};
  if (s.cuda_graph_impl == graph_impl::transformer_engine) return version{2, 10, 0};
  if (overlap_grad_reduce) return version{2, 8, 0};
  return version{2, 7, 0};
}

/// A Transformer Engine version is declared and older than `v`.
constexpr bool te_older_than(const settings& s, version v) { return s.te_version.has_value() && *s.te_version < v; }

/// OPT-3 over a settings value: every integer in its domain, and (for run-time values, which
/// need not come from option types) every enum a declared enumerator and every declared TP
/// userbuffer slot a real method.
constexpr bool in_domain(const settings& s) {
  const auto at_least = [](const std::optional<int>& v, int lo) { return !v || *v >= lo; };
  const bool sizes = tp(s) >= 1 && pp(s) >= 1 && cp(s) >= 1 && dp(s) >= 1 && ep(s) >= 1 &&
                     at_least(s.expert_tensor_parallel_size, 1) && at_least(s.virtual_pipeline_model_parallel_size, 2);
  const bool integers = at_least(s.num_moe_experts, 1) && at_least(s.moe_shared_expert_intermediate_size, 1) &&
                        (!s.bucket_size || *s.bucket_size >= 1) && at_least(s.num_buckets, 1) &&
                        at_least(s.mtp_num_layers, 0) && at_least(s.recompute_num_layers, 1) &&
                        (!s.cuda_device_max_connections ||
                         (*s.cuda_device_max_connections >= 1 && *s.cuda_device_max_connections <= 32)) &&
                        at_least(s.layernorm_sm_margin, 0);
  const auto opt_enum = [](const auto& v) { return !v || is_enumerator(*v); };
  const bool enums = is_enumerator(s.moe_token_dispatcher_type) && opt_enum(s.moe_flex_dispatcher_backend) &&
                     is_enumerator(s.precision) && opt_enum(s.recompute_granularity) && opt_enum(s.recompute_method) &&
                     is_enumerator(s.cuda_graph_impl) && opt_enum(s.gpu) &&
                     is_enumerator(s.tp_comm_bootstrap_backend) && s.recompute_modules.valid() &&
                     s.cuda_graph_modules.valid();
  bool slots = true;
  if (s.tp_comm_overlap_cfg) {
    for (const ub::slot_id id : ub::all_slots) {
      const auto& declared = s.tp_comm_overlap_cfg->slots[id];
      if (declared && (declared->method == ub::method::none || !is_enumerator(declared->method))) slots = false;
    }
  }
  return sizes && integers && enums && slots;
}

/// What an upstream TP userbuffer preset's name says about the run it was tuned for (TP-18).
struct preset_traits {
  int tp = 0;
  std::optional<int> cp{};
  bool fp8 = false;
  bool b200_family = false;  ///< else the h100 family
};

/// Reads `userbuffers_<bf16|fp8>_<h100|b200>_h<H>_tp<N>[_cp<M>]_...`.
constexpr preset_traits parse_preset_name(std::string_view name) {
  const auto number_after = [&](std::string_view key) -> std::optional<int> {
    const auto at = name.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    int v = 0;
    for (std::size_t i = at + key.size(); i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i)
      v = v < 100'000 ? v * 10 + (name[i] - '0') : v;  // a name is no place for huge sizes
    return v;
  };
  return preset_traits{.tp = number_after("_tp").value_or(0),
                       .cp = number_after("_cp"),
                       .fp8 = name.find("_fp8_") != std::string_view::npos,
                       .b200_family = name.find("_b200_") != std::string_view::npos};
}

/// TP-18: the preset's name disagrees with the configuration it is used in.
constexpr bool preset_mismatch(const settings& s) {
  if (!s.tp_comm_overlap_cfg || s.tp_comm_overlap_cfg->preset_name.empty()) return false;
  const preset_traits p = parse_preset_name(s.tp_comm_overlap_cfg->preset_name);
  const bool layout = p.tp != tp(s) || (p.cp && *p.cp != cp(s));
  const bool precision = p.fp8 != s.fp8;
  const bool hopper = s.gpu == gpu_model::h100 || s.gpu == gpu_model::h200;
  const bool gpu = s.gpu && !(p.b200_family ? blackwell(s) : hopper);
  return layout || precision || gpu;
}

}  // namespace overlap::rules
