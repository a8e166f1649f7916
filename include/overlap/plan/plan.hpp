#pragma once
/// @file
/// Planning without a GPU: for each overlap family a configuration enables, generate the family's
/// step with the configuration's overlap settings and with them turned off (the baseline),
/// simulate both, and report step time and exposed communication; then the composed step of all
/// families together against the same step with every overlap off. Each step is generated and
/// simulated once per class of symmetric ranks (schedule/classes.hpp), so a plan of thousands of
/// GPUs costs what its distinct ranks cost; its results are the full step's.

#include <string>
#include <utility>
#include <vector>

#include <overlap/plan/parallel.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/rules/derive.hpp>
#include <overlap/rules/rule.hpp>
#include <overlap/schedule/classes.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulate.hpp>

namespace overlap::plan {

using sim::cost_model;
using sim::options;
using sim::result;
using sim::workspace;

struct family_plan {
  schedule::family family = schedule::family::none;  ///< none: all families composed
  std::string note;                                  ///< what the comparison leaves out, if anything
  /// Each step's programs, one per class representative in rank order, and its classes (which
  /// ranks each representative stands for): pass both to `verify::verify`, `sim::simulate` and
  /// the trace writers. `schedule::compose_step` gives every rank's program, for a small layout.
  std::vector<schedule::program> baseline_step, overlap_step;
  schedule::rank_classes baseline_classes, overlap_classes;
  /// The full step's step time, exposed and total communication; intervals of the representatives.
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

/// A step generated and simulated once per class of symmetric ranks.
struct class_simulation {
  std::vector<schedule::program> step;  ///< the representatives' programs, in rank order
  schedule::rank_classes classes;
  result simulated;  ///< the full step's times; intervals of the representatives
};

/// The step of settings `s` (valid: see `validate`) with the families `on`, generated and simulated
/// once per class, at the connections the settings imply; the result holds per-op intervals when
/// `intervals` (options::intervals), and the simulation keeps its state in `reuse` when given
/// (options::reuse). Throws as `compose_step` does.
inline class_simulation simulate_by_class(const settings& s, const schedule::workload& w, const cost_model& cost,
                                          schedule::family_set on = {}, bool intervals = true,
                                          workspace* reuse = nullptr) {
  const resolved_settings r = derive(s);
  schedule::class_step made = schedule::compose_class_step(s, r, w, cost.machine().gpus_per_node, on);
  options opt = options_for(r);
  opt.intervals = intervals;
  opt.reuse = reuse;
  result simulated = sim::simulate(made.representatives, cost, made.classes, opt);
  return {std::move(made.representatives), std::move(made.classes), std::move(simulated)};
}

namespace detail {
/// Simulation `i` of `plan` (`simulate_by_class` into its three fields of one step): 0 its
/// overlap step, settings `s` as given; 1 its baseline, `s` without the overlap of plan.family
/// (none: every overlap off). Both generate the families `on`.
inline void simulate_half(family_plan& plan, std::size_t i, const settings& s, const schedule::workload& w,
                          const cost_model& cost, schedule::family_set on) {
  const bool baseline = i == 1;
  class_simulation made = simulate_by_class(baseline ? without_overlap(s, plan.family) : s, w, cost, on);
  (baseline ? plan.baseline_step : plan.overlap_step) = std::move(made.step);
  (baseline ? plan.baseline_classes : plan.overlap_classes) = std::move(made.classes);
  (baseline ? plan.baseline : plan.overlap) = std::move(made.simulated);
}
}  // namespace detail

/// The per-family comparison for settings `s` (valid: see `validate`) and workload `w`. Its
/// simulations run on up to `threads` threads (parallel_for's: 0 all cores, 1 in order on the
/// calling thread, for a caller that runs plans in parallel itself); the results are the same.
inline std::vector<family_plan> plan_families(const settings& s, const schedule::workload& w, const cost_model& cost,
                                              unsigned threads = 0) {
  using schedule::family;
  struct candidate {
    family f;
    bool enabled;
    schedule::family_set on;
  };
  const candidate candidates[] = {
      {family::tp, s.tensor_model_parallel_size > 1, {.tp = true, .dp = false, .pp = false, .ep = false}},
      {family::dp, s.data_parallel_size > 1, {.tp = false, .dp = true, .pp = false, .ep = false}},
      {family::pp, s.pipeline_model_parallel_size > 1, {.tp = false, .dp = false, .pp = true, .ep = false}},
      {family::ep,
       s.expert_model_parallel_size > 1 && s.num_moe_experts.value_or(0) > 0,
       {.tp = false, .dp = false, .pp = false, .ep = true}},
  };
  std::vector<family_plan> out;
  std::vector<schedule::family_set> on;  // per plan: the families its steps generate
  for (const candidate& c : candidates) {
    if (!c.enabled) continue;
    on.push_back(c.on);
    family_plan& plan = out.emplace_back();
    plan.family = c.f;
    if (c.f == family::pp && s.virtual_pipeline_model_parallel_size && s.pipeline_model_parallel_size == 2)
      plan.note = "vpp on pp 2 needs overlap_p2p_comm (PP-8): the baseline keeps it on";
  }
  // Each plan's two simulations: the overlap step (even index) and its baseline (odd).
  parallel_for(
      2 * out.size(), [&](std::size_t i) { detail::simulate_half(out[i / 2], i % 2, s, w, cost, on[i / 2]); }, threads);
  return out;
}

/// The composed step of every family `s` enables against the same step with every overlap off,
/// the two simulated on up to `threads` threads (as in `plan_families`).
inline family_plan plan_step(const settings& s, const schedule::workload& w, const cost_model& cost,
                             unsigned threads = 0) {
  family_plan plan;
  parallel_for(
      2, [&](std::size_t i) { detail::simulate_half(plan, i, s, w, cost, {}); }, threads);
  return plan;
}

}  // namespace overlap::plan
