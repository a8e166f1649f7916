#pragma once
/// @file
/// Planning without a GPU: for each overlap family a configuration enables, generate the family's
/// step with the configuration's overlap settings and with them turned off (the baseline),
/// simulate both, and report step time and exposed communication; then the composed step of all
/// families together against the same step with every overlap off.

#include <string>
#include <vector>

#include <overlap/rules/derive.hpp>
#include <overlap/rules/rule.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulator.hpp>

namespace overlap::plan {

using sim::cost_model;
using sim::options;
using sim::result;

struct family_plan {
  schedule::family family = schedule::family::none;  ///< none: all families composed
  std::string note;  ///< what the comparison leaves out, if anything
  std::vector<schedule::program> baseline_step, overlap_step;
  result baseline, overlap;
};

namespace detail {
/// `s` with the overlap of `f` turned off, still valid when `s` is (compose_step validates it):
/// PP overlap stays on with vpp on pp 2, which needs it (PP-8), and nothing is set for pp 1
/// (PP-16); EP's early attention-memory release (EP-16) and a CUDA_DEVICE_MAX_CONNECTIONS pinned
/// for EP overlap (ENV-1 without it) go with EP overlap.
inline settings without_overlap(settings s, schedule::family f) {
  switch (f) {
    case schedule::family::tp:
      s.tp_comm_overlap = false;
      s.tp_comm_overlap_cfg.reset();
      break;
    case schedule::family::dp:
      s.overlap_grad_reduce = false;
      s.overlap_param_gather = false;
      s.overlap_param_gather_with_optimizer_step = false;
      s.align_param_gather = false;
      break;
    case schedule::family::pp:
      if (s.pipeline_model_parallel_size == 1) break;
      if (s.virtual_pipeline_model_parallel_size && s.pipeline_model_parallel_size == 2) break;
      s.overlap_p2p_comm = false;
      s.batch_p2p_comm = true;
      s.overlap_p2p_comm_warmup_flush = false;
      break;
    case schedule::family::ep:
      s.overlap_moe_expert_parallel_comm = false;
      s.delay_wgrad_compute = false;
      s.ep_overlap_early_attn_memory_release = false;
      if (rules::conditions::ENV_1(s, derive(s))) s.cuda_device_max_connections.reset();
      break;
    case schedule::family::none:
      for (const auto f : schedule::families) s = without_overlap(s, f);
      break;
  }
  return s;
}

}  // namespace detail

/// The simulator options a configuration implies: its CUDA_DEVICE_MAX_CONNECTIONS (CUDA's default
/// 8 when it leaves the variable alone).
inline options options_for(const resolved_settings& r) {
  return options{.cuda_device_max_connections = r.cuda_device_max_connections.value_or(8)};
}

/// The per-family comparison for settings `s` (valid: see `validate`) and workload `w`.
inline std::vector<family_plan> plan_families(const settings& s, const schedule::workload& w,
                                              const cost_model& cost) {
  using schedule::family;
  using generator = std::vector<schedule::program> (*)(const settings&, const resolved_settings&,
                                                       const schedule::workload&);
  struct candidate {
    family f;
    bool enabled;
    generator generate;
  };
  const candidate candidates[] = {
      {family::tp, s.tensor_model_parallel_size > 1, &schedule::tensor_parallel_step},
      {family::dp, s.data_parallel_size > 1, &schedule::data_parallel_step},
      {family::pp, s.pipeline_model_parallel_size > 1, &schedule::pipeline_parallel_step},
      {family::ep, s.expert_model_parallel_size > 1 && s.num_moe_experts.value_or(0) > 0,
       &schedule::expert_parallel_step},
  };
  std::vector<family_plan> out;
  for (const candidate& c : candidates) {
    if (!c.enabled) continue;
    family_plan plan;
    plan.family = c.f;
    if (c.f == family::pp && s.virtual_pipeline_model_parallel_size && s.pipeline_model_parallel_size == 2)
      plan.note = "vpp on pp 2 needs overlap_p2p_comm (PP-8): the baseline keeps it on";
    const resolved_settings r = derive(s);
    const settings base_settings = detail::without_overlap(s, c.f);
    const resolved_settings base = derive(base_settings);
    plan.overlap_step = c.generate(s, r, w);
    plan.baseline_step = c.generate(base_settings, base, w);
    plan.overlap = sim::simulate(plan.overlap_step, cost, options_for(r));
    plan.baseline = sim::simulate(plan.baseline_step, cost, options_for(base));
    out.push_back(std::move(plan));
  }
  return out;
}

/// The composed step of every family `s` enables (one program per rank of the layout) against
/// the same step with every overlap off.
inline family_plan plan_step(const settings& s, const schedule::workload& w, const cost_model& cost) {
  family_plan plan;
  const resolved_settings r = derive(s);
  const settings base_settings = detail::without_overlap(s, schedule::family::none);
  const resolved_settings base = derive(base_settings);
  plan.overlap_step = schedule::compose_step(s, r, w);
  plan.baseline_step = schedule::compose_step(base_settings, base, w);
  plan.overlap = sim::simulate(plan.overlap_step, cost, options_for(r));
  plan.baseline = sim::simulate(plan.baseline_step, cost, options_for(base));
  return plan;
}

}  // namespace overlap::plan
