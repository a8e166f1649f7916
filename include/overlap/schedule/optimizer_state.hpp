#pragma once
/// @file
/// What Adam keeps per parameter of the shard (or replica) a rank updates, as Megatron-Core
/// allocates it: OptimizerConfig's precision fields (megatron/core/optimizer/optimizer_config.py),
/// the optimizer it builds from them (optimizer/__init__.py) and the shards of its distributed
/// optimizer (distrib_optimizer.py), with Transformer Engine's FusedAdam.
///
/// - Without `use_precision_aware_optimizer`: an fp32 master copy of 16-bit parameters (none of
///   fp32 ones, which the optimizer updates in place) and the two moments in fp32: 12 bytes a
///   parameter in a bf16 or fp16 run, 8 in an fp32 one.
/// - With it: the moments in `exp_avg_dtype` and `exp_avg_sq_dtype`, and a master copy that
///   FusedAdam keeps in `main_params_dtype`, unless the fp8 recipe the optimizer is told of
///   quantizes with its own scales (every recipe but delayed scaling) and the master copy is fp32:
///   then Megatron-Core keeps that copy itself, in fp32 (its
///   use_precision_aware_optimizer_no_fp8_or_ds_fp8). FusedAdam with `store_param_remainders`
///   (Transformer Engine 2.1 and later) keeps of an fp32 master copy of bf16 parameters only the
///   16 bits the parameter lacks: 2 bytes.
///
/// DeepSeek-V3's recipes (precision-aware, bf16 moments, fp32 master, remainders, no fp8 recipe
/// for the optimizer): 2 + 2 + 2 = 6 bytes a parameter, against 12 for plain Adam.

#include <cstdint>
#include <optional>

#include <overlap/settings/enums.hpp>
#include <overlap/settings/version.hpp>

namespace overlap::schedule {

/// Megatron-Core's OptimizerConfig fields that size Adam's state; dtypes as their sizes in bytes
/// (torch.float32 4, torch.float16 and torch.bfloat16 2, torch.uint8 1).
struct optimizer_precision {
  bool use_precision_aware_optimizer = false;
  bool store_param_remainders = true;
  int main_params_bytes = 4;
  int exp_avg_bytes = 4;
  int exp_avg_sq_bytes = 4;
  /// The optimizer's fp8_recipe (Bridge copies mixed_precision's over it) is one that scales
  /// outside the optimizer's kernel: tensorwise, mxfp8, blockwise (not none, not delayed).
  bool fp8_recipe_with_own_scales = false;
};

/// Bytes of Adam's state per parameter a rank updates, for parameters of `params` (the run's
/// precision) under Transformer Engine `te` (unknown: a current one).
constexpr std::int64_t adam_state_bytes(const optimizer_precision& o, dtype params,
                                        std::optional<version> te = std::nullopt) {
  const std::int64_t moments = std::int64_t{o.exp_avg_bytes} + o.exp_avg_sq_bytes;
  if (!o.use_precision_aware_optimizer) return (params == dtype::fp32 ? 0 : 4) + 8;
  const bool fp32_master = o.main_params_bytes == 4;
  if (fp32_master && o.fp8_recipe_with_own_scales) return 4 + moments;  // Megatron-Core's own copy
  const bool remainders =
      o.store_param_remainders && fp32_master && params == dtype::bf16 && (!te || *te >= version{2, 1, 0});
  return (remainders ? 2 : o.main_params_bytes) + moments;
}

}  // namespace overlap::schedule
