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

namespace {
std::vector<sc::program> dp_step() {
  using cfg = ov::config<ov::dp<4>, ov::distributed_optimizer<>, ov::num_buckets<4>>;
  sc::workload w{.layers = 4, .micro_batches = 2, .seq_length = 1024, .hidden = 1024, .ffn_hidden = 3584};
  return sc::data_parallel_step(cfg::settings, cfg::resolved, w);
}

std::size_t index_of(const sc::program& p, const std::string& name) {
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].name == name) return i;
  FAIL("no op " << name);
  return 0;
}

bool reports(const std::vector<ov::verify::finding>& found, int rank, const std::string& text) {
  for (const auto& f : found)
    if (f.rank == rank && f.op >= 0 && f.reason.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("faults injected into a generated DP step are caught with rank, op and reason") {
  REQUIRE(ov::verify::verify(dp_step()).empty());

  auto swapped = dp_step();  // rank 2 issues two bucket reductions in the other order
  std::swap(swapped[2].ops[index_of(swapped[2], "grad_reduce_b0")],
            swapped[2].ops[index_of(swapped[2], "grad_reduce_b1")]);
  CHECK(reports(ov::verify::verify(swapped), 2, "where the issue order gives"));

  auto unordered = dp_step();  // the optimizer no longer waits for the dp stream
  auto& ops = unordered[1].ops;
  const std::size_t optimizer = index_of(unordered[1], "optimizer");
  REQUIRE(ops[optimizer - 1].kind == sc::op_kind::wait);
  ops.erase(ops.begin() + static_cast<long>(optimizer) - 1);
  CHECK(reports(ov::verify::verify(unordered), 1, "without depending on op"));

  auto early_wait = dp_step();  // a wait moved before the record it waits for
  auto& p0 = early_wait[0].ops;
  for (std::size_t i = 1; i < p0.size(); ++i)
    if (p0[i].kind == sc::op_kind::wait && p0[i - 1].kind == sc::op_kind::record &&
        p0[i].event == p0[i - 1].event) {
      std::swap(p0[i], p0[i - 1]);
      break;
    }
  CHECK(reports(ov::verify::verify(early_wait), 0, "before any record"));

  auto reused = dp_step();  // the backward writes the buffer bucket 0's reduction writes
  auto& r3 = reused[3];
  r3.ops[index_of(r3, "bwd_l0_mb1")].writes.push_back(2 * 4);  // reduced gradient of bucket 0
  CHECK(reports(ov::verify::verify(reused), 3, "buffer 8"));
}

TEST_CASE("a ring exchange without its NCCL group hangs, and the verifier shows the cycle") {
  using cfg = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>>;
  sc::workload w{.layers = 1, .micro_batches = 1, .seq_length = 1024, .hidden = 1024, .ffn_hidden = 3584};
  auto step = sc::tensor_parallel_step(cfg::settings, cfg::resolved, w);
  REQUIRE(ov::verify::verify(step).empty());
  for (auto& p : step)
    for (auto& o : p.ops) o.group = -1;
  const auto found = ov::verify::verify(step);
  REQUIRE(found.size() == 1);
  CHECK(found[0].reason.find("dependency cycle") != std::string::npos);
  CHECK(found[0].reason.find("_ring0_send") != std::string::npos);
  CHECK(ov::sim::simulate(step, ov::sim::cost_model(ov::sim::h100_node())).deadlock);
}
