// Every program the generators make for a grid of valid layouts and overlap settings (each family
// alone and all of them composed) verifies, with buffers declared on every op, and simulates to
// completion within the lower bound. Its own executable, built
// optimized: it generates, verifies and simulates ~1,400 steps.
#include <doctest/doctest.h>

#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/sim/bound.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

TEST_CASE("generated programs of a grid of valid layouts verify and simulate to completion") {
  const ov::sim::cost_model h100(ov::sim::h100_node());
  sc::workload w{.num_layers = 8, .micro_batches = 4, .seq_length = 1024, .hidden_size = 1024,
                 .ffn_hidden_size = 3584, .moe_router_topk = 2, .moe_ffn_hidden_size = 512};
  int valid = 0, plans = 0;
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
              if (!ov::validate(s).ok()) continue;
              ++valid;
              std::vector<ov::plan::family_plan> all = ov::plan::plan_families(s, w, h100);
              all.push_back(ov::plan::plan_step(s, w, h100));
              for (const auto& plan : all) {
                ++plans;
                const ov::settings base = ov::plan::detail::without_overlap(s, plan.family);
                for (const auto* step : {&plan.baseline_step, &plan.overlap_step}) {
                  // What a trainer binds is known from the type: no op of another type appears.
                  const ov::settings& used = step == &plan.baseline_step ? base : s;
                  const sc::op_type_set types = sc::used_op_types(used, ov::derive(used));
                  const auto found = ov::verify::verify(*step);
                  CAPTURE(tp);
                  CAPTURE(pp);
                  CAPTURE(vpp);
                  CAPTURE(dp);
                  CAPTURE(ep);
                  CAPTURE(flags);
                  CAPTURE(static_cast<int>(plan.family));
                  REQUIRE(found.empty());
                  // Data flow is checked for every family: every op that computes or moves data
                  // says which buffers.
                  for (const auto& p : *step)
                    for (const auto& o : p.ops)
                      if (o.kind == sc::op_kind::compute || sc::is_communication(o.kind)) {
                        CAPTURE(sc::display_name(o));
                        REQUIRE(!(o.reads.empty() && o.writes.empty()));
                        REQUIRE(types.contains(o.key.type));
                      }
                }
                CHECK_FALSE(plan.baseline.deadlock);
                CHECK_FALSE(plan.overlap.deadlock);
                CHECK(plan.overlap.step_time_us > 0);
                // The bound holds: no simulated step beats it.
                const auto opt = ov::plan::options_for(ov::derive(s));
                CHECK(ov::sim::lower_bound(plan.overlap_step, h100, opt).value() <=
                      plan.overlap.step_time_us * (1 + 1e-9));
              }
            }
  MESSAGE(valid << " valid layouts, " << plans << " plans (families alone and composed)");
  CHECK(valid > 100);
  CHECK(plans > 300);
}
