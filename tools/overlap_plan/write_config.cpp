// The writing of a config (bridge.hpp): settings and a workload as the tree Bridge dumps.
#include <string>
#include <type_traits>

#include "bridge.hpp"
#include "places.hpp"

namespace overlap_plan {

namespace {

/// The optimizer's precision fields that differ from Megatron-Core's defaults.
void write_optimizer(json& tree, const ov::schedule::optimizer_precision& o) {
  using detail::put;
  const ov::schedule::optimizer_precision defaults;
  if (o.use_precision_aware_optimizer != defaults.use_precision_aware_optimizer)
    put(tree, "optimizer.use_precision_aware_optimizer", o.use_precision_aware_optimizer);
  if (o.store_param_remainders != defaults.store_param_remainders)
    put(tree, "optimizer.store_param_remainders", o.store_param_remainders);
  const auto dtype = [&](const char* path, int bytes, int default_bytes) {
    if (bytes != default_bytes) put(tree, path, detail::torch_dtype_name(bytes));
  };
  dtype("optimizer.main_params_dtype", o.main_params_bytes, defaults.main_params_bytes);
  dtype("optimizer.exp_avg_dtype", o.exp_avg_bytes, defaults.exp_avg_bytes);
  dtype("optimizer.exp_avg_sq_dtype", o.exp_avg_sq_bytes, defaults.exp_avg_sq_bytes);
  if (o.fp8_recipe_with_own_scales) put(tree, "optimizer.fp8_recipe", "tensorwise");
}

}  // namespace

json write_config(const ov::settings& s, const ov::schedule::workload* w) {
  using namespace detail;
  json tree = json::object();
  tree["model"] = json::object();
  tree["comm_overlap"] = json::object();
  put(tree, "ddp.use_distributed_optimizer", s.distributed_optimizer);
  put(tree, "comm_overlap.data_parallel_size", s.data_parallel_size);
  ov::reflect::for_each_field(s, [&](std::string_view field, const auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if (field == "data_parallel_size" || field == "distributed_optimizer" || field == "gpu" || field == "te_version" ||
        field == "cuda_device_max_connections" || field == "layernorm_sm_margin")
      return;
    std::string path = places_of(field, tree).read.front();
    if constexpr (std::is_same_v<T, ov::dtype>) {  // precision
      put(tree, "model.bf16", member == ov::dtype::bf16);
      put(tree, "model.fp16", member == ov::dtype::fp16);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (field == "use_dist_ckpt")
        put(tree, "checkpoint.ckpt_format", member ? "torch_dist" : "torch");
      else
        put(tree, path, member);
    } else if constexpr (is_optional<T>::value) {
      if (!member) return;
      using V = typename T::value_type;
      if constexpr (std::is_enum_v<V>)
        put(tree, path, std::string(ov::to_string(*member)));
      else if constexpr (std::is_same_v<V, ov::ub::user_config>) {
        if (!member->preset_name.empty()) {
          put(tree, path, std::string(member->preset_name));
          return;
        }
        json slots = json::object();
        for (const ov::ub::slot_id id : ov::ub::all_slots)
          if (member->slots[id]) slots[std::string(ov::ub::to_string(id))] = slot_tree(*member->slots[id]);
        put(tree, path, slots);
      } else if constexpr (!std::is_same_v<V, ov::version>) {  // te_version: under overlap_plan, below
        put(tree, path, *member);
      }
    } else if constexpr (std::is_enum_v<T>) {
      put(tree, path, std::string(ov::to_string(member)));
    } else if constexpr (is_enum_set<T>::value) {
      put(tree, path, enum_list(member));
    } else {
      put(tree, path, member);
    }
  });
  if (s.gpu) put(tree, "overlap_plan.gpu", std::string(ov::to_string(*s.gpu)));
  if (s.te_version)
    put(tree, "overlap_plan.te_version",
        std::to_string(s.te_version->major) + "." + std::to_string(s.te_version->minor) + "." +
            std::to_string(s.te_version->patch));
  if (s.cuda_device_max_connections) put(tree, "env_vars.CUDA_DEVICE_MAX_CONNECTIONS", *s.cuda_device_max_connections);
  if (s.layernorm_sm_margin) {
    put(tree, "env_vars.NVTE_FWD_LAYERNORM_SM_MARGIN", *s.layernorm_sm_margin);
    put(tree, "env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN", *s.layernorm_sm_margin);
  }
  if (w) {
    ov::reflect::for_each_field(*w, [&](std::string_view field, const auto& member) {
      using T = std::remove_cvref_t<decltype(member)>;
      if (field == "micro_batches") return;
      const std::string path =
          field == "micro_batch_size" ? "train.micro_batch_size" : "model." + std::string(detail::bridge_name(field));
      if constexpr (std::is_same_v<T, std::string>)
        put(tree, path, member.empty() ? json() : json(member));
      else if constexpr (std::is_same_v<T, int>)
        put(tree, path, member == 0 && field.find("pipeline_s") != std::string_view::npos ? json() : json(member));
      else
        put(tree, path, member);
    });
    put(tree, "train.global_batch_size", w->micro_batches * w->micro_batch_size * s.data_parallel_size);
    write_optimizer(tree, w->optimizer);
    if (w->fp8_recipe_mxfp8) put(tree, "mixed_precision.fp8_recipe", "mxfp8");
  }
  return tree;
}

}  // namespace overlap_plan
