// The EP generator: with EP overlap (combined 1F1B) every all-to-all of a paired micro-batch runs
// under the other micro-batch's compute; only the unpaired first forward and last backward expose
// theirs. Without it every all-to-all is exposed.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
constexpr int ep_family = static_cast<int>(sc::family::ep);

using moe_options = ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                               ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>>;
using overlapped =
    ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
               ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>>;
using delayed = ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>>;

sc::workload moe_workload() {  // MoE layers with top-8 routing: 4 layers, 4 micro-batches
  sc::workload w;
  w.num_layers = 4;
  w.micro_batches = 4;
  w.hidden_size = 4096;
  w.moe_router_topk = 8;
  w.moe_ffn_hidden_size = 768;
  return w;
}

template <class Cfg>
ov::sim::result run(const sc::workload& w, std::vector<sc::program>* keep = nullptr) {
  auto step = sc::expert_parallel_step(Cfg::settings, Cfg::resolved, w);
  const std::string problems = ov::verify::verify_report(step);
  INFO(problems);
  CHECK(problems.empty());
  auto r = ov::sim::simulate(step, ov::sim::analytic_cost_model(ov::sim::h100_node()));
  if (keep) *keep = std::move(step);
  return r;
}
}  // namespace

TEST_CASE("without EP overlap every all-to-all is exposed") {
  const auto r = run<moe_options>(moe_workload());
  REQUIRE_FALSE(r.deadlock);
  CHECK(r.exposed_comm_us[ep_family] == doctest::Approx(r.comm_us[ep_family]));
}

TEST_CASE("with EP overlap, in the steady state, every all-to-all overlaps the other micro-batch's compute") {
  const sc::workload w = moe_workload();
  std::vector<sc::program> step;
  const auto r = run<overlapped>(w, &step);
  const auto base = run<moe_options>(w);
  REQUIRE_FALSE(r.deadlock);
  // Per rank 0: an all-to-all of a paired micro-batch lies under compute of the step.
  std::vector<std::pair<double, double>> compute;
  for (const auto& i : r.intervals)
    if (i.rank == 0 && step[0].ops[i.op].kind == sc::op_kind::compute) compute.emplace_back(i.start_us, i.end_us);
  int paired = 0;
  double forward_combine_us = 0;
  std::vector<double> backward_combine_us;
  for (const auto& i : r.intervals) {
    const sc::op& o = step[0].ops[i.op];
    if (i.rank != 0 || o.kind != sc::op_kind::collective) continue;
    const bool forward = o.key.type == sc::op_type::ep_dispatch || o.key.type == sc::op_type::ep_combine;
    const bool first_forward = forward && o.key.at.micro_batch == 0;
    const bool last_backward = !forward && o.key.at.micro_batch == 3;
    // The first all-to-all after the unpaired warm-up forward has no forward compute of its
    // pair left to hide under: the schedule is not in its steady state yet.
    const bool entering =
        o.key == sc::op_key{.type = sc::op_type::ep_combine_bprop, .at = {.layer = 3, .micro_batch = 0}};
    if (first_forward || last_backward || entering) continue;
    double covered = 0;
    for (const auto& [s, e] : compute) covered += std::max(0.0, std::min(e, i.end_us) - std::max(s, i.start_us));
    CAPTURE(sc::display_name(o));
    const double length = i.end_us - i.start_us;
    if (o.key.type == sc::op_type::ep_combine_bprop) {
      // Dispatched while the other micro-batch's GEMM holds every SM: placed in that GEMM's tail,
      // packed four CTAs to an SM, it moves at that placement's rate for its life and outlasts the
      // compute beside it (measured on an H200 for a copy kernel: bench/concurrency).
      backward_combine_us.push_back(length);
      CHECK(covered > 0.3 * length);
    } else {
      if (o.key.type == sc::op_type::ep_combine) forward_combine_us = length;
      CHECK(covered == doctest::Approx(length).epsilon(0.01));
    }
    ++paired;
  }
  CHECK(paired == 2 * 4 * 3 * 2 - 1);  // (dispatch + combine) x layers x 3 pairs x (F and B)
  REQUIRE(forward_combine_us > 0);
  for (const double us : backward_combine_us) CHECK(us > 2 * forward_combine_us);
  MESSAGE("ep exposed: " << r.exposed_comm_us[ep_family] << " us overlapped vs " << base.exposed_comm_us[ep_family]
                         << " us; step " << r.step_time_us << " vs " << base.step_time_us << " us");
  CHECK(r.exposed_comm_us[ep_family] < 0.6 * base.exposed_comm_us[ep_family]);
  CHECK(r.step_time_us < base.step_time_us);
}

TEST_CASE("delayed wgrad moves expert and attention weight gradients into the overlapped phases") {
  const sc::workload w = moe_workload();
  const auto with = run<delayed>(w);
  const auto without = run<overlapped>(w);
  REQUIRE_FALSE(with.deadlock);
  CHECK(with.exposed_comm_us[ep_family] <= without.exposed_comm_us[ep_family] * 1.01);
  CHECK(with.compute_us == doctest::Approx(without.compute_us).epsilon(0.02));
}

TEST_CASE("the alltoall dispatcher's host waits for the router's token counts before each dispatch") {
  std::vector<sc::program> step;
  const auto r = run<overlapped>(moe_workload(), &step);
  REQUIRE_FALSE(r.deadlock);
  const sc::program& p = step.front();
  const sc::rank_order order(p);
  int syncs = 0, dispatches = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const sc::op& o = p.ops[i];
    if (o.key.type == sc::op_type::ep_dispatch) ++dispatches;
    if (o.key.type != sc::op_type::moe_token_count_sync) continue;
    ++syncs;
    CAPTURE(i);
    REQUIRE(o.kind == sc::op_kind::host_sync);
    REQUIRE(o.event >= 0);
    // It waits for the record after its micro-batch's router and permutation, nothing else...
    const auto preds = order.predecessors(i);
    REQUIRE_FALSE(preds.empty());
    const sc::op& record = p.ops[preds.back()];
    CHECK(record.kind == sc::op_kind::record);
    CHECK(record.event == o.event);
    // ...and the next communication the host issues is that micro-batch's dispatch.
    std::size_t next = i + 1;
    while (next < p.ops.size() && !sc::is_communication(p.ops[next].kind)) ++next;
    REQUIRE(next < p.ops.size());
    CHECK(p.ops[next].key.type == sc::op_type::ep_dispatch);
    CHECK(p.ops[next].key.at.micro_batch == o.key.at.micro_batch);
    CHECK(p.ops[next].key.at.layer == o.key.at.layer);
  }
  CHECK(syncs == dispatches);
  CHECK(syncs == 4 * 4);  // one per layer and micro-batch
}

TEST_CASE("the flex dispatcher has no host wait for token counts") {
  using flex = ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                          ov::moe_token_dispatcher_type<ov::dispatcher::flex>,
                          ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>>;
  std::vector<sc::program> step;
  const auto r = run<flex>(moe_workload(), &step);
  REQUIRE_FALSE(r.deadlock);
  for (const sc::op& o : step.front().ops) CHECK(o.key.type != sc::op_type::moe_token_count_sync);
}

TEST_CASE("routed experts and core attention carry their problem shapes, which their flops follow") {
  // ep8 of 64 experts: 8 local experts; each rank's 4,096 tokens x top-8 rows spread evenly over
  // them, 4,096 rows each. Attention: 32 heads of 128 over the 4,096-token sequence.
  const sc::workload w = moe_workload();
  const auto step = sc::compose_step(moe_options::settings, moe_options::resolved, w);
  int experts = 0, attention = 0;
  for (const sc::op& o : step.front().ops) {
    if (o.kind != sc::op_kind::compute) continue;
    const double g = static_cast<double>(o.gemm.groups), m = static_cast<double>(o.gemm.m),
                 n = static_cast<double>(o.gemm.n), k = static_cast<double>(o.gemm.k);
    CAPTURE(sc::display_name(o));
    if (o.key.type == sc::op_type::experts_fprop || o.key.type == sc::op_type::experts_dgrad ||
        o.key.type == sc::op_type::experts_wgrad) {
      ++experts;
      CHECK(o.gemm == sc::gemm_shape{4096, 768, 4096, 8});
      CHECK(o.flops == doctest::Approx(2 * g * m * (2 * n * k + n * k)));  // fc1 (k -> 2n) and fc2 (n -> k)
    }
    if (o.key.type == sc::op_type::attn_core_fprop || o.key.type == sc::op_type::attn_core_bprop) {
      ++attention;
      CHECK(o.gemm == sc::gemm_shape{4096, 4096, 128, 32});
      const double forward = 2 * m * n * k * g;  // causal: half of Q K^T and of P V
      CHECK(o.flops == doctest::Approx(o.key.type == sc::op_type::attn_core_bprop ? 2.5 * forward : forward));
    }
  }
  CHECK(experts == 3 * 4 * 4);
  CHECK(attention == 2 * 4 * 4);
}

TEST_CASE("dense layers among MoE layers (moe_layer_freq): their MLP is the gated FFN, no all-to-all") {
  // DeepSeek-V3's first layers are dense: layer 0 here, then three MoE layers. With and without
  // EP overlap (a dense layer of a pair runs on its own), with pp 2 vpp 2 (the dense layer is
  // stage 0's first chunk).
  using piped = ov::config<ov::ep<4>, ov::dp<4>, ov::pp<2>, ov::vpp<2>, ov::num_moe_experts<16>,
                           ov::precision<ov::dtype::bf16>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>>;
  using piped_overlap =
      ov::config<ov::ep<4>, ov::dp<4>, ov::pp<2>, ov::vpp<2>, ov::num_moe_experts<16>, ov::precision<ov::dtype::bf16>,
                 ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>>;
  sc::workload w = moe_workload();
  w.ffn_hidden_size = 8 * 768;
  w.moe_layer_pattern = {0, 1, 1, 1};
  const auto check = [&](const auto& settings, const auto& resolved) {
    const auto step = sc::compose_step(settings, resolved, w);
    INFO(ov::verify::verify_report(step));
    CHECK(ov::verify::verify(step).empty());
    int dense_fc1 = 0, moe_fc1 = 0, dense_a2a = 0, moe_a2a = 0, dense_experts = 0;
    for (const auto& p : step)
      for (const auto& o : p.ops) {
        const bool dense = o.key.at.layer == 0;
        if (o.key.type == sc::op_type::fc1_fprop) (dense ? dense_fc1 : moe_fc1)++;
        if (o.key.type == sc::op_type::ep_dispatch) (dense ? dense_a2a : moe_a2a)++;
        if (o.key.type == sc::op_type::experts_fprop && dense) ++dense_experts;
      }
    CHECK(dense_fc1 > 0);
    CHECK(moe_fc1 == 0);
    CHECK(dense_a2a == 0);
    CHECK(moe_a2a > 0);
    CHECK(dense_experts == 0);
    const auto r = ov::sim::simulate(step, ov::sim::analytic_cost_model(ov::sim::h100_node()));
    CHECK_FALSE(r.deadlock);
    return r.step_time_us;
  };
  const double plain = check(piped::settings, piped::resolved);
  const double overlapped_step = check(piped_overlap::settings, piped_overlap::resolved);
  MESSAGE("step " << plain << " us, with EP overlap " << overlapped_step << " us");
  // A pattern that does not fit the model is refused.
  w.moe_layer_pattern = {0, 1, 1};
  CHECK_THROWS_WITH_AS(sc::compose_step(piped::settings, piped::resolved, w),
                       doctest::Contains("moe_layer_pattern has 3 entries, num_layers is 4"), std::invalid_argument);
  w.moe_layer_pattern = {0, 1, 2, 1};
  CHECK_THROWS_WITH_AS(sc::compose_step(piped::settings, piped::resolved, w),
                       doctest::Contains("moe_layer_pattern holds 1 (MoE) or 0 (dense)"), std::invalid_argument);
}
