// Every step the planner makes for a grid of valid layouts and overlap settings (each family alone
// and all of them composed, generated once per class of symmetric ranks) verifies, with buffers
// declared on every op, and simulates to completion within the lower bound; the composed step's
// classes equal the full step, generated for every rank, exactly (simulation, verification, bound),
// and the full step's simulation is the same bit for bit without the event loop's fast paths. Its own executable, built
// optimized: it generates, verifies and simulates ~1,400 steps, the layouts on all cores (plan/parallel.hpp), each into
// its own outcome, checked afterwards in grid order.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/plan/parallel.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/schedule/classes.hpp>
#include <overlap/sim/analysis/bound.hpp>
#include <overlap/verify/verify.hpp>

#include "class_check.hpp"

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {

struct grid_point {
  int tp, pp, vpp, dp, ep, flags;
  ov::settings s;
};

/// The settings of the grid that the rules accept, in grid order.
std::vector<grid_point> valid_grid() {
  std::vector<grid_point> out;
  for (const int tp : {1, 2, 4})
    for (const int pp : {1, 2, 4})
      for (const int vpp : {1, 2})
        for (const int dp : {1, 2, 8})
          for (const int ep : {1, 2, 8})
            for (const int flags : {0, 1, 2, 3}) {
              ov::settings s;
              s.tensor_model_parallel_size = tp;
              s.pipeline_model_parallel_size = pp;
              if (vpp > 1) s.virtual_pipeline_model_parallel_size = vpp;
              s.data_parallel_size = dp;
              s.expert_model_parallel_size = ep;
              s.expert_tensor_parallel_size = 1;
              s.num_moe_experts = 16;
              s.precision = ov::dtype::bf16;
              s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
              s.sequence_parallel = tp > 1;
              s.distributed_optimizer = (flags & 1) != 0;
              if (tp > 1) s.tp_comm_overlap = (flags & 2) != 0;
              if (ep > 1) {
                s.overlap_moe_expert_parallel_comm = (flags & 2) != 0;
                s.delay_wgrad_compute = (flags & 3) == 3;
              }
              if (ov::validate(s).ok()) out.push_back({tp, pp, vpp, dp, ep, flags, s});
            }
  return out;
}

/// What the checks read of one step of a plan (baseline or overlap).
struct step_outcome {
  std::vector<ov::verify::finding> problems;
  std::string undeclared;  ///< the first compute or comm op without buffers, if any
  std::string foreign;     ///< the first op of a type the config's type does not list, if any
};

struct plan_outcome {
  int family = 0;
  step_outcome baseline, overlap;
  bool baseline_deadlock = false, overlap_deadlock = false;
  double step_time_us = 0, bound_us = 0;
  class_comparison classes;  ///< the composed step only
  /// The composed full step simulated without the event loop's fast paths: the same bit for bit.
  bool fast_paths_exact = true;
};

std::vector<plan_outcome> run(const grid_point& g, const ov::sim::cost_model& cost, const sc::workload& w) {
  // One thread each: the grid's points run in parallel already.
  std::vector<ov::plan::family_plan> all = ov::plan::plan_families(g.s, w, cost, 1);
  all.push_back(ov::plan::plan_step(g.s, w, cost, 1));
  std::vector<plan_outcome> out;
  for (const auto& plan : all) {
    plan_outcome& o = out.emplace_back();
    o.family = static_cast<int>(plan.family);
    const ov::settings base = ov::plan::detail::without_overlap(g.s, plan.family);
    for (const auto* step : {&plan.baseline_step, &plan.overlap_step}) {
      // What a trainer binds is known from the type: no op of another type appears.
      const ov::settings& used = step == &plan.baseline_step ? base : g.s;
      const sc::op_type_set types = sc::used_op_types(used, ov::derive(used));
      step_outcome& x = step == &plan.baseline_step ? o.baseline : o.overlap;
      x.problems =
          ov::verify::verify(*step, step == &plan.baseline_step ? plan.baseline_classes : plan.overlap_classes);
      // Data flow is checked for every family: every op that computes or moves data says which
      // buffers.
      for (const auto& p : *step)
        for (const auto& op : p.ops)
          if (op.kind == sc::op_kind::compute || sc::is_communication(op.kind)) {
            if (x.undeclared.empty() && op.reads.empty() && op.writes.empty()) x.undeclared = sc::display_name(op);
            if (x.foreign.empty() && !types.contains(op.key.type)) x.foreign = sc::display_name(op);
          }
    }
    o.baseline_deadlock = plan.baseline.deadlock;
    o.overlap_deadlock = plan.overlap.deadlock;
    o.step_time_us = plan.overlap.step_time_us;
    ov::sim::options opt = ov::plan::options_for(ov::derive(g.s));
    opt.classes = &plan.overlap_classes;
    o.bound_us = ov::sim::lower_bound(plan.overlap_step, cost, opt).value();
    if (plan.family == sc::family::none) {
      // The plan's class step against the full step, generated and simulated for every rank.
      const auto full = sc::compose_step(g.s, ov::derive(g.s), w);
      ov::sim::options full_opt = ov::plan::options_for(ov::derive(g.s));
      o.classes = compare_classes(g.s, w, cost, full, ov::sim::simulate(full, cost, full_opt));
      full_opt.fast_paths = false;
      o.fast_paths_exact = identical(o.classes.full, ov::sim::simulate(full, cost, full_opt));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("generated programs of a grid of valid layouts verify and simulate to completion") {
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  const sc::workload w{.num_layers = 8,
                       .micro_batches = 4,
                       .seq_length = 1024,
                       .hidden_size = 1024,
                       .ffn_hidden_size = 3584,
                       .moe_router_topk = 2,
                       .moe_ffn_hidden_size = 512};
  const std::vector<grid_point> grid = valid_grid();
  std::vector<std::vector<plan_outcome>> outcomes(grid.size());
  ov::plan::parallel_for(grid.size(), [&](std::size_t i) { outcomes[i] = run(grid[i], h100, w); });
  int plans = 0, composed = 0, represented = 0, ranks = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const grid_point& g = grid[i];
    CAPTURE(g.tp);
    CAPTURE(g.pp);
    CAPTURE(g.vpp);
    CAPTURE(g.dp);
    CAPTURE(g.ep);
    CAPTURE(g.flags);
    for (const plan_outcome& o : outcomes[i]) {
      ++plans;
      CAPTURE(o.family);
      for (const step_outcome* x : {&o.baseline, &o.overlap}) {
        REQUIRE(x->problems.empty());
        CHECK(x->undeclared == "");
        CHECK(x->foreign == "");
      }
      CHECK_FALSE(o.baseline_deadlock);
      CHECK_FALSE(o.overlap_deadlock);
      CHECK(o.step_time_us > 0);
      // The bound holds: no simulated step beats it.
      CHECK(o.bound_us <= o.step_time_us * (1 + 1e-9));
      if (o.family == static_cast<int>(sc::family::none)) {
        check(o.classes);
        CHECK(o.fast_paths_exact);
        ++composed;
        represented += o.classes.representatives;
        ranks += o.classes.world;
      }
    }
  }
  MESSAGE(grid.size() << " valid layouts, " << plans
                      << " plans (families alone and composed); the composed steps "
                         "simulated with "
                      << represented << " representatives for " << ranks << " ranks");
  CHECK(composed == static_cast<int>(grid.size()));
  CHECK(represented < ranks / 2);  // the classes do merge ranks
  CHECK(grid.size() > 100);
  CHECK(plans > 300);
}
