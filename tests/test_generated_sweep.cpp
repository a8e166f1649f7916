// Every program the generators make for a grid of valid layouts and overlap settings verifies and
// simulates to completion.
#include <doctest/doctest.h>

#include <string>

#include <overlap/overlap.hpp>
#include <overlap/sim/plan.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

TEST_CASE("generated programs of a grid of valid layouts verify and simulate to completion") {
  const ov::sim::cost_model h100(ov::sim::h100_node());
  sc::workload w{.layers = 4, .micro_batches = 3, .seq_length = 1024, .hidden = 1024,
                 .ffn_hidden = 3584, .experts = 16, .top_k = 2, .moe_ffn_hidden = 512};
  int valid = 0, plans = 0;
  for (const int tp : {1, 2, 4})
    for (const int pp : {1, 2, 4})
      for (const int dp : {1, 2, 8})
        for (const int ep : {1, 2, 8})
          for (const int flags : {0, 1, 2, 3}) {
            ov::settings s;
            s.tensor_model_parallel_size = tp;
            s.pipeline_model_parallel_size = pp;
            s.data_parallel_size = dp;
            s.expert_model_parallel_size = ep;
            s.expert_tensor_parallel_size = 1;
            s.num_moe_experts = 16;
            s.precision = ov::dtype::bf16;
            s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
            s.sequence_parallel = tp > 1;
            s.distributed_optimizer = (flags & 1) != 0;
            if (tp > 1) s.tp_comm_overlap = (flags & 2) != 0;
            if (ep > 1 && pp == 1) {
              s.overlap_moe_expert_parallel_comm = (flags & 2) != 0;
              s.delay_wgrad_compute = (flags & 3) == 3;
            }
            if (!ov::validate(s).ok()) continue;
            ++valid;
            for (const auto& plan : ov::sim::plan_families(s, w, h100)) {
              ++plans;
              for (const auto* step : {&plan.baseline_step, &plan.overlap_step}) {
                const auto found = ov::verify::verify(*step);
                CAPTURE(tp);
                CAPTURE(pp);
                CAPTURE(dp);
                CAPTURE(ep);
                CAPTURE(flags);
                CAPTURE(static_cast<int>(plan.family));
                REQUIRE(found.empty());
              }
              CHECK_FALSE(plan.baseline.deadlock);
              CHECK_FALSE(plan.overlap.deadlock);
              CHECK(plan.overlap.step_time_us > 0);
            }
          }
  MESSAGE(valid << " valid layouts, " << plans << " family plans");
  CHECK(valid > 50);
  CHECK(plans > 100);
}
