#pragma once
// overlap-plan: where Bridge keeps each settings field, in upstream's precedence where it keeps one
// value in two places (rules PREC-4..6, DP-6/7 of docs/rules.md, mixed precision applied over the
// model), the fields it has that this tool cannot honour, and upstream's defaults as a dump holds
// them.

#include <string>
#include <string_view>
#include <vector>

#include "convert.hpp"

namespace overlap_plan::detail {

/// Where Bridge keeps a settings field: `read`, in precedence order (the first that holds a value
/// wins; a later one that disagrees gets a note saying `why`), and `overwritten`, places Bridge
/// replaces with the derived-or-user value whatever they hold (a note when they differ from it).
struct places {
  std::vector<std::string> read;
  std::vector<std::string> overwritten{};
  std::string why{};
};

inline constexpr std::string_view comm_overlap_owned[] = {"tp_comm_overlap",      "overlap_p2p_comm",
                                                          "batch_p2p_comm",       "defer_embedding_wgrad_compute",
                                                          "wgrad_deferral_limit", "overlap_moe_expert_parallel_comm",
                                                          "delay_wgrad_compute",  "tp_comm_bootstrap_backend",
                                                          "tp_comm_overlap_cfg"};
inline constexpr std::string_view ddp_owned[] = {"overlap_grad_reduce", "overlap_param_gather", "align_param_gather",
                                                 "bucket_size"};

inline bool in(std::string_view name, const auto& list) {
  for (const std::string_view x : list)
    if (x == name) return true;
  return false;
}

inline bool ddp_distributed_optimizer(const json& tree) {
  const json* v = given(tree, "ddp.use_distributed_optimizer");
  return v && v->is_boolean() && v->get<bool>();
}

inline places places_of(std::string_view field, const json& tree) {
  const std::string name(field);
  const bool comm_overlap = section(tree, "comm_overlap");
  if (in(field, comm_overlap_owned)) {
    if (comm_overlap)
      return {{"comm_overlap." + name},
              {"model." + name},
              "Bridge overwrites the model's value with comm_overlap's (PREC-4)"};
    return {{"model." + name}};
  }
  const bool distributed = ddp_distributed_optimizer(tree);
  const bool on_optimizer = field == "overlap_param_gather_with_optimizer_step";
  const std::string home = on_optimizer ? "optimizer." : "ddp.";
  if (in(field, ddp_owned) || on_optimizer) {
    std::vector<std::string> also;
    if (field == "overlap_param_gather") also.push_back("optimizer.overlap_param_gather");
    if (distributed && comm_overlap) {
      places p{{"comm_overlap." + name},
               {home + name},
               "with ddp.use_distributed_optimizer, Bridge copies comm_overlap's value over it (PREC-6)"};
      p.overwritten.insert(p.overwritten.end(), also.begin(), also.end());
      return p;
    }
    places p{
        {home + name}, {}, "Bridge ignores comm_overlap's DP fields without ddp.use_distributed_optimizer (PREC-5)"};
    p.read.insert(p.read.end(), also.begin(), also.end());
    p.read.push_back("comm_overlap." + name);
    return p;
  }
  if (field == "num_buckets") return {{"ddp.num_buckets"}};
  if (field == "fp8" || field == "fp4" || field == "fp8_param_gather")
    return {{"mixed_precision." + name, "model." + name, "ddp." + name},
            {},
            "Bridge applies the mixed_precision config over the model and ddp"};
  if (field == "grad_reduce_in_fp32")
    return {{"mixed_precision." + name, "ddp." + name}, {}, "Bridge applies the mixed_precision config over ddp"};
  return {{"model." + name}};
}

/// Fields that shape the run but that overlap-plan does not model: a note when they are set.
struct unhonoured {
  std::string_view path, why;
  double quiet_up_to = 1;   ///< a number up to this says the feature is off
  bool when_false = false;  ///< a switch on by default: said when turned off
};
inline constexpr unhonoured not_honoured[] = {
    {"ddp.use_megatron_fsdp", "FSDP is out of scope: its DP schedule is not modelled or checked"},
    {"ddp.use_custom_fsdp", "FSDP is out of scope: its DP schedule is not modelled or checked"},
    {"ddp.num_distributed_optimizer_instances", "partial distributed optimizer (DP-14) is not modelled"},
    {"model.cpu_offloading", "CPU offloading is out of scope"},
    {"model.fine_grained_activation_offloading", "activation offloading is out of scope (EP-14 not checked)"},
    {"model.moe_enable_deepep",
     "deprecated flag (FX-9); set moe_token_dispatcher_type flex and moe_flex_dispatcher_backend deepep"},
    {"dataset.packing_buffer_size",
     "Energon native packing makes Bridge turn EP overlap and delayed wgrad off (EP-19); not modelled"},
    {"model.tp_comm_overlap_ag",
     "per-GEMM TP switches (TP-15) are not modelled: every all-gather is overlapped as "
     "its tp_comm_overlap_cfg slot says",
     1, true},
    {"model.tp_comm_overlap_rs",
     "per-GEMM TP switches (TP-15) are not modelled: every reduce-scatter is overlapped as "
     "its tp_comm_overlap_cfg slot says",
     1, true},
    {"mixed_precision.first_last_layers_bf16",
     "the first and last layers in bf16 are not modelled: every layer's "
     "GEMMs run in the recipe's format"},
    {"mixed_precision.fp8_dot_product_attention", "fp8 core attention is not modelled: attention runs in bf16"},
};

/// A workload field's name in Bridge's model config, where it differs.
constexpr std::string_view bridge_name(std::string_view field) {
  return field == "pipeline_layout" ? "pipeline_model_parallel_layout" : field;
}

/// The upstream defaults of the fields that upstream may turn off or ignore (rules::upstream), as
/// `to_yaml()` dumps them: the dataclass defaults of Megatron-Core's ModelParallelConfig,
/// TransformerConfig, DistributedDataParallelConfig and OptimizerConfig. (Bridge's CommOverlapConfig
/// defaults every field but tp_comm_overlap to null, which reads as unset.) A dump holds every
/// default, so such a value says nothing about what a person asked for.
struct upstream_default {
  std::string_view path, value;  ///< the value as JSON text
};
inline constexpr upstream_default upstream_defaults[] = {
    {"model.tp_comm_overlap", "false"},
    {"model.tp_comm_overlap_cfg", "null"},
    {"model.sequence_parallel", "false"},
    {"model.overlap_p2p_comm", "false"},
    {"model.batch_p2p_comm", "true"},
    {"model.moe_shared_expert_overlap", "false"},
    {"model.moe_token_dispatcher_type", "\"allgather\""},
    {"model.moe_flex_dispatcher_backend", "\"deepep\""},
    {"ddp.overlap_grad_reduce", "false"},
    {"ddp.overlap_param_gather", "false"},
    {"ddp.align_param_gather", "false"},
    {"optimizer.overlap_param_gather", "false"},
    {"optimizer.overlap_param_gather_with_optimizer_step", "false"},
};

}  // namespace overlap_plan::detail
