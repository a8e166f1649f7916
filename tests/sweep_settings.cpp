// The run-time half of the sweep: configuration i's picks assigned to settings fields directly,
// without the option types, so the type-level reduction is checked against plain assignments.
#include "sweep.hpp"

namespace sweep {
namespace {

template <auto& Values>
auto value_of(std::size_t i, int f) {
  return Values[pick(i, f, std::size(Values))];
}

/// Tri-state flag: 0 absent, 1 true, 2 false.
template <class Field>
void set_tri(std::size_t i, int f, Field& field) {
  const std::size_t k = pick(i, f, 3);
  if (k != 0) field = (k == 1);
}

template <auto& Values, class Field>
void optional_value(std::size_t i, int f, Field& field) {
  const auto v = value_of<Values>(i, f);
  if (v != 0) field = v;
}

}  // namespace

ov::settings settings_of(std::size_t i) {
  ov::settings s;
  s.tensor_model_parallel_size = value_of<tp_v>(i, f_tp);
  if (const int v = value_of<pp_v>(i, f_pp)) s.pipeline_model_parallel_size = v;
  optional_value<vpp_v>(i, f_vpp, s.virtual_pipeline_model_parallel_size);
  if (const int v = value_of<cp_v>(i, f_cp)) s.context_parallel_size = v;
  if (const int v = value_of<dp_v>(i, f_dp)) s.data_parallel_size = v;
  if (const int v = value_of<ep_v>(i, f_ep)) s.expert_model_parallel_size = v;
  optional_value<etp_v>(i, f_etp, s.expert_tensor_parallel_size);
  optional_value<experts_v>(i, f_experts, s.num_moe_experts);
  optional_value<shared_v>(i, f_shared, s.moe_shared_expert_intermediate_size);
  optional_value<mtp_v>(i, f_mtp, s.mtp_num_layers);
  optional_value<recompute_layers_v>(i, f_recompute_layers, s.recompute_num_layers);
  optional_value<buckets_v>(i, f_buckets, s.num_buckets);
  optional_value<bucket_size_v>(i, f_bucket_size, s.bucket_size);
  optional_value<deferral_v>(i, f_deferral, s.wgrad_deferral_limit);
  optional_value<connections_v>(i, f_connections, s.cuda_device_max_connections);
  optional_value<margin_v>(i, f_margin, s.layernorm_sm_margin);
  if (pick(i, f_dispatcher, std::size(dispatcher_v)) != 0)
    s.moe_token_dispatcher_type = value_of<dispatcher_v>(i, f_dispatcher);
  if (pick(i, f_backend, std::size(backend_v)) != 0) s.moe_flex_dispatcher_backend = value_of<backend_v>(i, f_backend);
  if (pick(i, f_precision, std::size(precision_v)) != 0) s.precision = value_of<precision_v>(i, f_precision);
  if (pick(i, f_granularity, std::size(granularity_v)) != 0)
    s.recompute_granularity = value_of<granularity_v>(i, f_granularity);
  if (pick(i, f_recompute_method, 4) == 1) s.recompute_method = ov::recompute::block;
  if (pick(i, f_recompute_modules, 4) == 1) s.recompute_modules.insert(ov::module::moe);
  if (pick(i, f_recompute_modules, 4) == 2) {
    s.recompute_modules.insert(ov::module::shared_experts);
    s.recompute_modules.insert(ov::module::core_attn);
  }
  if (pick(i, f_graph_impl, std::size(graph_impl_v)) != 0) s.cuda_graph_impl = value_of<graph_impl_v>(i, f_graph_impl);
  if (pick(i, f_graph_modules, 4) == 1) s.cuda_graph_modules.insert(ov::graph_module::attn);
  if (pick(i, f_graph_modules, 4) == 2) {
    s.cuda_graph_modules.insert(ov::graph_module::moe_router);
    s.cuda_graph_modules.insert(ov::graph_module::moe);
  }
  if (pick(i, f_gpu, std::size(gpu_v)) != 0) s.gpu = value_of<gpu_v>(i, f_gpu);
  if (pick(i, f_te, std::size(te_v)) != 0) s.te_version = value_of<te_v>(i, f_te);
  if (pick(i, f_preset, 4) == 1 || pick(i, f_preset, 4) == 2) {
    // Slot by slot, as upstream lists presets #13 (bf16 h12288) and #10 (fp8 h16384 LoRA).
    namespace ub = ov::ub;
    const ub::slot ring = ub::default_knobs(ub::method::ring_exchange);
    ov::ub::user_config c;
    if (pick(i, f_preset, 4) == 1) {
      c.preset_name = "userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048";
      c.slots.qkv_dgrad = ub::slot{ub::method::bulk, 4, 2};
      c.slots.qkv_wgrad = ub::slot{ub::method::bulk, 4, 2};
      c.slots.fc1_dgrad = ub::slot{ub::method::bulk, 2, 2};
      c.slots.fc1_wgrad = ub::slot{ub::method::bulk, 4, 2};
      c.slots.qkv_fprop = c.slots.proj_dgrad = c.slots.fc1_fprop = c.slots.fc2_dgrad = ring;
      c.slots.proj_fprop = ub::slot{ub::method::pipeline, 24, 2, 4, true};
      ub::slot ring_margin = ring;
      ring_margin.set_sm_margin = true;
      c.slots.fc2_fprop = ring_margin;
    } else {
      c.preset_name = "userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora";
      ub::slot ring_aggregate = ring;
      ring_aggregate.aggregate = true;
      c.slots.qkv_dgrad = ub::slot{ub::method::bulk, 2, 2};
      c.slots.fc1_dgrad = ub::slot{ub::method::pipeline, 16, 2, 4, true, false, true};
      c.slots.qkv_fprop = c.slots.proj_dgrad = c.slots.fc1_fprop = c.slots.fc2_dgrad = ring_aggregate;
      c.slots.proj_fprop = ub::slot{ub::method::pipeline, 32, 2, 4, true, false, true};
      c.slots.fc2_fprop = ub::slot{ub::method::pipeline, 16, 2, 4, true, false, true};
    }
    s.tp_comm_overlap_cfg = c;
  }
  set_tri(i, f_sp, s.sequence_parallel);
  set_tri(i, f_dist_opt, s.distributed_optimizer);
  set_tri(i, f_tp_overlap, s.tp_comm_overlap);
  set_tri(i, f_p2p, s.overlap_p2p_comm);
  set_tri(i, f_batch, s.batch_p2p_comm);
  set_tri(i, f_grad, s.overlap_grad_reduce);
  set_tri(i, f_param, s.overlap_param_gather);
  set_tri(i, f_param_step, s.overlap_param_gather_with_optimizer_step);
  set_tri(i, f_align, s.align_param_gather);
  set_tri(i, f_defer, s.defer_embedding_wgrad_compute);
  set_tri(i, f_ep_overlap, s.overlap_moe_expert_parallel_comm);
  set_tri(i, f_delay, s.delay_wgrad_compute);
  set_tri(i, f_shared_overlap, s.moe_shared_expert_overlap);
  set_tri(i, f_early_release, s.ep_overlap_early_attn_memory_release);
  set_tri(i, f_dispatch_bwd, s.overlap_dispatch_backward_with_experts_wgrad);
  set_tri(i, f_pad, s.moe_pad_expert_input_to_capacity);
  set_tri(i, f_fusion, s.gradient_accumulation_fusion);
  set_tri(i, f_bias, s.add_bias_linear);
  set_tri(i, f_fp8, s.fp8);
  set_tri(i, f_fp8_gather, s.fp8_param_gather);
  set_tri(i, f_dist_ckpt, s.use_dist_ckpt);
  set_tri(i, f_warmup_flush, s.overlap_p2p_comm_warmup_flush);
  return s;
}

}  // namespace sweep
