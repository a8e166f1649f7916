// The DP generator: its programs verify, and on an H100 node with a compute-bound backward and
// one hardware queue only the last bucket's reduction is exposed (with eight, more: the reductions
// are placed packed in the GEMMs' tails).
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
constexpr int dp_family = static_cast<int>(sc::family::dp);

template <class Cfg>
std::vector<sc::program> step_of(const sc::workload& w) {
  return sc::data_parallel_step(Cfg::settings, Cfg::resolved, w);
}

/// A dense 8-layer model of hidden 1024 for the pipeline cases, `micro_batches` a step.
sc::workload pipelined(int micro_batches) {
  return {.num_layers = 8,
          .micro_batches = micro_batches,
          .seq_length = 1024,
          .hidden_size = 1024,
          .ffn_hidden_size = 4096,
          .num_attention_heads = 8,
          .vocab_size = 32000};
}

}  // namespace

TEST_CASE("buckets pack whole tensors in reverse order and close at bucket_size") {
  using t = sc::parameter_tensor;
  const std::vector<t> chunk{{sc::op_type::qkv_fprop, 0, 0, 100},
                             {sc::op_type::proj_fprop, 0, 0, 300},
                             {sc::op_type::fc1_fprop, 0, 0, 200},
                             {sc::op_type::fc2_fprop, 0, 0, 50},
                             {sc::op_type::qkv_fprop, 1, 1, 400}};
  const auto packed = sc::pack_buckets(chunk, 400, std::nullopt);
  REQUIRE(packed.size() == 3);
  CHECK(packed[0].parameters == 400);  // the last tensor alone reaches 400
  CHECK(packed[1].parameters == 550);  // 50 + 200 + 300: closes once it holds >= 400
  CHECK(packed[2].parameters == 100);
  CHECK(packed[1].holders() == std::vector<int>{0});
  CHECK(sc::pack_buckets(chunk, std::nullopt, std::nullopt).size() == 1);
  CHECK(sc::pack_buckets(chunk, std::nullopt, 2).size() == 2);  // limit 525: 400 + 50 + 200, then 300 + 100
}

namespace {
/// The communication time of op `o` of `p` on an H100 node, as the simulator charges it.
double comm_time(const sc::program& p, const sc::op& o) {
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  return h100.comm_us(o, static_cast<int>(p.comms[static_cast<std::size_t>(o.comm)].ranks.size()), false);
}
std::vector<const sc::op*> ops_of(const sc::program& p, sc::op_type type) {
  std::vector<const sc::op*> out;
  for (const auto& o : p.ops)
    if (o.key.type == type) out.push_back(&o);
  return out;
}
}  // namespace

TEST_CASE("bucket_size changes the buckets, the program and the exposed DP time") {
  // A compute-bound backward (4,096 tokens) and a small vocabulary, so that what is exposed is
  // the reductions left at the end, not an output layer bucket or a network-bound DP stream. One
  // hardware queue, as Megatron's launch scripts set it: each reduction starts when the GEMM
  // before it in issue order ends (see the next test for eight).
  sc::workload w{.num_layers = 8, .micro_batches = 2, .seq_length = 4096, .vocab_size = 1024};
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  const auto run = [&](auto cfg) {
    using c = decltype(cfg);
    const auto step = step_of<c>(w);
    INFO(ov::verify::verify_report(step));
    CHECK(ov::verify::verify(step).empty());
    const auto r = ov::sim::simulate(step, h100, {.cuda_device_max_connections = 1});
    REQUIRE_FALSE(r.deadlock);
    return std::make_pair(ops_of(step[0], sc::op_type::dp_grad_reduce).size(), r.exposed_comm_us[dp_family]);
  };
  const auto small = run(ov::config<ov::dp<8>, ov::overlap_grad_reduce<>, ov::bucket_size<5'000'000>>{});
  const auto medium = run(ov::config<ov::dp<8>, ov::overlap_grad_reduce<>, ov::bucket_size<40'000'000>>{});
  const auto large = run(ov::config<ov::dp<8>, ov::overlap_grad_reduce<>, ov::bucket_size<134'217'728>>{});
  MESSAGE("buckets " << small.first << " / " << medium.first << " / " << large.first << ", exposed dp " << small.second
                     << " / " << medium.second << " / " << large.second << " us");
  // 8 layers of 6 tensors (norm, qkv, proj, norm, fc1, fc2), the embedding, the final norm and
  // the output layer (1024 x 4096 = 4.2 M, under 5 M). At 5 M every GEMM weight of a layer closes
  // a bucket and a norm (4,096) rides with the tensor after it in reverse order: output layer +
  // final norm + fc2 of layer 7; then per layer fc1, norm + proj, qkv, norm + the fc2 below it
  // (layer 0: norm + the embedding): 1 + 8 x 4.
  CHECK(small.first == 1 + 8 * 4);
  CHECK(small.first > medium.first);
  CHECK(medium.first > large.first);
  // Large buckets leave more of the last reductions with no backward to hide under; very small
  // ones pay a collective's latency per bucket, and in one queue each waits for the GEMM issued
  // before it: upstream's default of 40 M exposes the least.
  CHECK(large.second > 1.5 * medium.second);
  CHECK(small.second > 1.5 * medium.second);
}

TEST_CASE("with DP overlap and a compute-bound backward only the last buckets' reductions are exposed") {
  sc::workload w;
  w.micro_batches = 2;
  w.vocab_size = 1024;  // a small output layer: the backward is the layers' GEMMs
  using overlapped = ov::config<ov::dp<8>, ov::overlap_grad_reduce<>>;  // DP-13: 40 M buckets
  using serial = ov::config<ov::dp<8>>;
  const auto o_step = step_of<overlapped>(w);
  const auto s_step = step_of<serial>(w);
  INFO(ov::verify::verify_report(o_step));
  CHECK(ov::verify::verify(o_step).empty());
  CHECK(ov::verify::verify(s_step).empty());

  // One hardware queue (as Megatron's launch scripts set it): each reduction is dispatched when
  // the GEMM before it in issue order ends and runs spread beside the next one.
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  const auto o = ov::sim::simulate(o_step, h100, {.cuda_device_max_connections = 1});
  const auto s = ov::sim::simulate(s_step, h100, {.cuda_device_max_connections = 1});
  REQUIRE_FALSE(o.deadlock);
  // The buckets of the first layer and the embedding become ready when no GEMM is left to hide
  // them (a layer's gradients count as produced when its backward ends; only the memory-bound
  // embedding backward follows); every other bucket runs under the backward of the layers below.
  const auto reduces = ops_of(o_step[0], sc::op_type::dp_grad_reduce);
  const double last = comm_time(o_step[0], *reduces.back());
  MESSAGE("dp comm " << o.comm_us[dp_family] << " us, exposed " << o.exposed_comm_us[dp_family] << " us, last bucket "
                     << last << " us; serial step " << s.step_time_us << " us, overlapped " << o.step_time_us);
  CHECK(o.exposed_comm_us[dp_family] > 0.95 * last);
  CHECK(o.exposed_comm_us[dp_family] < 0.15 * o.comm_us[dp_family]);
  CHECK(s.exposed_comm_us[dp_family] == doctest::Approx(s.comm_us[dp_family]));
  CHECK(o.step_time_us < s.step_time_us);
  // Eight queues (CUDA's default): a reduction dispatched while a backward GEMM holds every SM is
  // placed in that GEMM's tail, packed four CTAs to an SM, and moves at that rate for its life
  // (measured on an H200: bench/concurrency); the stream of reductions falls behind and more of
  // it is left at the end. Still better than no overlap.
  const auto eight = ov::sim::simulate(o_step, h100, {.cuda_device_max_connections = 8});
  REQUIRE_FALSE(eight.deadlock);
  MESSAGE("at 8 connections: dp comm " << eight.comm_us[dp_family] << " us, exposed "
                                       << eight.exposed_comm_us[dp_family] << " us, step " << eight.step_time_us
                                       << " us");
  CHECK(eight.comm_us[dp_family] > 1.3 * o.comm_us[dp_family]);
  CHECK(eight.exposed_comm_us[dp_family] > 2 * o.exposed_comm_us[dp_family]);
  CHECK(eight.step_time_us < s.step_time_us);
}

TEST_CASE("param all-gathers are prefetched one bucket ahead with the distributed optimizer") {
  sc::workload w;
  w.micro_batches = 1;
  using cfg = ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::num_buckets<4>>;
  const auto step = step_of<cfg>(w);
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const auto r = ov::sim::simulate(step, ov::sim::analytic_cost_model(ov::sim::h100_node()));
  REQUIRE_FALSE(r.deadlock);
  // Exposed: the first gather, the last reductions, and what of a prefetched gather one bucket's
  // forward cannot hide; far from all of it.
  const auto gathers = ops_of(step[0], sc::op_type::dp_param_gather);
  const auto reduces = ops_of(step[0], sc::op_type::dp_grad_reduce);
  CHECK(gathers.size() == 4);
  CHECK(reduces.size() == 4);
  const double ends = comm_time(step[0], *gathers.front()) + comm_time(step[0], *reduces.back());
  MESSAGE("dp comm " << r.comm_us[dp_family] << " us, exposed " << r.exposed_comm_us[dp_family]
                     << " us; first gather + last reduction " << ends << " us");
  CHECK(r.exposed_comm_us[dp_family] > 0.95 * ends);
  CHECK(r.exposed_comm_us[dp_family] < 0.6 * r.comm_us[dp_family]);
  using no_overlap = ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::num_buckets<4>,
                                ov::overlap_grad_reduce<false>, ov::overlap_param_gather<false>>;
  const auto serial = ov::sim::simulate(step_of<no_overlap>(w), ov::sim::analytic_cost_model(ov::sim::h100_node()));
  CHECK(serial.exposed_comm_us[dp_family] == doctest::Approx(serial.comm_us[dp_family]));
}

TEST_CASE("with a pipeline only the first stage reduces during its last backward, the others in the drain") {
  // 1F1B (no vpp) over 4 stages, dp 4 with the distributed optimizer: Megatron-Core's schedule with
  // align_grad_reduce overlaps the reductions with the last backward on stage 0 only.
  ov::settings s;
  s.pipeline_model_parallel_size = 4;
  s.data_parallel_size = 4;
  s.distributed_optimizer = true;
  s.precision = ov::dtype::bf16;
  s.overlap_param_gather = false;
  s.bucket_size = 1'000'000;  // several buckets a stage
  const ov::resolved_settings r = ov::derive(s);
  const sc::workload w = pipelined(8);
  const auto step = sc::compose_step(s, r, w);
  CHECK(ov::verify::verify(step).empty());
  const int stages = 4, per_stage = 4;  // dp ranks
  for (int stage = 0; stage < stages; ++stage) {
    const sc::program& p = step[static_cast<std::size_t>(stage * per_stage)];
    std::size_t first_reduce = p.ops.size(), last_send = 0, last_backward = 0;
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const sc::op& o = p.ops[i];
      if (o.key.type == sc::op_type::dp_grad_reduce) first_reduce = std::min(first_reduce, i);
      if (o.key.type == sc::op_type::pp_send_backward) last_send = i;
      if (o.key.type == sc::op_type::qkv_dgrad || o.key.type == sc::op_type::fc1_dgrad) last_backward = i;
    }
    CAPTURE(stage);
    REQUIRE(first_reduce < p.ops.size());
    if (stage == 0)
      CHECK(first_reduce < last_backward);  // overlapped with the last backward
    else
      CHECK(first_reduce > last_send);  // after the stage's last send
  }
  // Gradient overlap does not make the step slower than none (it did, by 6 %, when every stage's
  // reductions held its one hardware queue ahead of its last send).
  ov::settings off = s;
  off.overlap_grad_reduce = false;
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  const double with = ov::sim::simulate(step, h100).step_time_us;
  const double without = ov::sim::simulate(sc::compose_step(off, ov::derive(off), w), h100).step_time_us;
  CHECK(with <= without * 1.001);
}

TEST_CASE("aligned param gathers in an interleaved pipeline: whole chunks, when the schedule says") {
  // Megatron-Core with align_param_gather (Bridge derives it with vpp): chunks 0 and 1 are
  // dispatched whole at the start; chunk c + 1 at the forward of virtual micro-batch k where
  // k + pp_rank is the first of chunk c; a use only waits. pp 2, vpp 4: one layer a virtual stage.
  ov::settings s;
  s.pipeline_model_parallel_size = 2;
  s.virtual_pipeline_model_parallel_size = 4;
  s.data_parallel_size = 2;
  s.distributed_optimizer = true;
  s.precision = ov::dtype::bf16;
  s.bucket_size = 1'000'000;  // several buckets a chunk
  const ov::resolved_settings r = ov::derive(s);
  REQUIRE(r.align_param_gather);
  REQUIRE(r.overlap_param_gather);
  const sc::workload w = pipelined(4);
  const auto step = sc::compose_step(s, r, w);
  CHECK(ov::verify::verify(step).empty());
  for (int stage = 0; stage < 2; ++stage) {
    const sc::program& p = step[static_cast<std::size_t>(stage * 2)];
    // Per chunk: where its gathers are, and where its forwards start (the i-th forward op of it).
    std::vector<std::vector<std::size_t>> gathers(4), forwards(4);
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const sc::op& o = p.ops[i];
      if (o.key.type == sc::op_type::dp_param_gather) gathers[static_cast<std::size_t>(o.key.at.chunk)].push_back(i);
      const std::string name(sc::to_string(o.key.type));
      if (o.kind == sc::op_kind::compute && o.key.at.layer >= 0 && !o.key.recompute && name.ends_with("_fprop") &&
          (forwards[static_cast<std::size_t>((o.key.at.layer - stage) / 2)].empty() ||
           o.key.at.micro_batch !=
               p.ops[forwards[static_cast<std::size_t>((o.key.at.layer - stage) / 2)].back()].key.at.micro_batch))
        forwards[static_cast<std::size_t>((o.key.at.layer - stage) / 2)].push_back(i);
    }
    CAPTURE(stage);
    for (int c = 0; c < 4; ++c) {
      const auto& g = gathers[static_cast<std::size_t>(c)];
      REQUIRE(g.size() > 1);
      // A chunk's gathers go out together, before any of its forwards.
      CHECK(g.back() < forwards[static_cast<std::size_t>(c)].front());
      for (std::size_t i = g.front(); i < g.back(); ++i) CHECK(p.ops[i].kind != sc::op_kind::compute);
    }
    // Chunks 0 and 1 at the start.
    CHECK(gathers[1].back() < forwards[0].front());
    // Chunk 2 at virtual micro-batch 2 - stage: chunk 1's first forward on stage 0, chunk 0's
    // second on stage 1; chunk 3 at virtual micro-batch 4 - stage likewise.
    const auto& before2 = stage == 0 ? forwards[1][0] : forwards[0][1];
    const auto& before3 = stage == 0 ? forwards[2][0] : forwards[1][1];
    CHECK(gathers[2].back() < before2);
    CHECK(gathers[2].front() > (stage == 0 ? forwards[0][1] : forwards[0][0]));
    CHECK(gathers[3].back() < before3);
    CHECK(gathers[3].front() > (stage == 0 ? forwards[1][1] : forwards[1][0]));
  }
}
