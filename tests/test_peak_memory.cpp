// Peak memory per rank from the schedule (sim/analysis/memory.hpp): the live ranges of hand-made programs,
// the peak over issue order and over a timeline, and on generated steps what a layer keeps from
// its forward to its backward (against Korthikanti et al.'s activation formulas), how many
// micro-batches a pipeline stage holds, and what EP overlap and recompute change.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/trace/chrome_trace.hpp>
#include <overlap/trace/svg_timeline.hpp>
#include <overlap/verify/verify.hpp>

#include "step_checks.hpp"

namespace ov = overlap;
namespace sc = overlap::schedule;
using ov::sim::live_range;
using ov::sim::memory_use;

namespace {
using test_queries::small_gqa;
using bf16 = ov::precision<ov::dtype::bf16>;

std::size_t use(memory_use u) { return static_cast<std::size_t>(u); }

/// A one-stream program over `buffers` (sizes `bytes`), each op reading and writing the listed ones.
sc::program hand_made(std::vector<sc::buffer> buffers, std::vector<std::int64_t> bytes,
                      std::vector<std::pair<sc::buffer_list, sc::buffer_list>> ops) {
  sc::program p;
  p.streams = {{}};
  p.buffers = std::move(buffers);
  p.buffer_bytes = std::move(bytes);
  for (auto& [reads, writes] : ops)
    p.ops.push_back(
        {.kind = sc::op_kind::compute, .key = {.type = sc::op_type::qkv_fprop}, .reads = reads, .writes = writes});
  return p;
}
const sc::buffer act{.kind = sc::buffer_kind::activation}, work{.kind = sc::buffer_kind::workspace},
    weights{.kind = sc::buffer_kind::parameters};

/// small_gqa's layers with multi-head attention and a SwiGLU of ffn = 8h/3: h 384, 6 heads of
/// 64, ffn 1024.
sc::workload multi_head() {
  sc::workload w = small_gqa();
  w.hidden_size = 384;
  w.ffn_hidden_size = 1024;
  w.num_attention_heads = 6;
  w.num_query_groups = 0;
  return w;
}

bool is_backward(sc::op_type t) {
  const std::string_view n = sc::to_string(t);
  return n.ends_with("dgrad") || n.ends_with("wgrad") || n.ends_with("bprop");
}
/// The bytes layer `l` of micro-batch `mb` keeps from its forward to its backward: its buffers'
/// values alive at its first backward (or recomputed) op.
std::int64_t kept_across(const sc::program& p, int l, int mb) {
  std::size_t backward = p.ops.size();
  for (std::size_t i = 0; i < p.ops.size() && backward == p.ops.size(); ++i) {
    const sc::op_key& k = p.ops[i].key;
    if (k.at.layer == l && k.at.micro_batch == mb && (k.recompute || is_backward(k.type) || is_backward(k.slot)))
      backward = i;
  }
  REQUIRE(backward < p.ops.size());
  std::int64_t kept = 0;
  for (const live_range& r : ov::sim::live_ranges(p)) {
    const sc::buffer& b = p.buffers[static_cast<std::size_t>(r.buffer)];
    if (b.at.layer == l && b.at.micro_batch == mb && static_cast<std::size_t>(r.first) < backward &&
        static_cast<std::size_t>(r.last) >= backward)
      kept += p.buffer_bytes[static_cast<std::size_t>(r.buffer)];
  }
  return kept;
}
/// The most (layer, micro-batch) inputs of `layers` alive at once over issue order, and the most
/// distinct micro-batches among them.
std::pair<int, int> most_in_flight(const sc::program& p, std::set<int> layers) {
  const std::vector<live_range> ranges = ov::sim::live_ranges(p);
  int most = 0, most_batches = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    int alive = 0;
    std::set<int> batches;
    for (const live_range& r : ranges) {
      const sc::buffer& b = p.buffers[static_cast<std::size_t>(r.buffer)];
      if (b.kind == sc::buffer_kind::activation && layers.contains(b.at.layer) && r.first <= static_cast<int>(i) &&
          static_cast<int>(i) <= r.last) {
        ++alive;
        batches.insert(b.at.micro_batch);
      }
    }
    most = std::max(most, alive);
    most_batches = std::max(most_batches, static_cast<int>(batches.size()));
  }
  return {most, most_batches};
}
}  // namespace

TEST_CASE("a value lives from its writer to its last reader, a rewrite after a read starts a new one") {
  // op 0 writes the workspace, op 1 reads it, op 2 writes it again (a recompute), op 3 reads it.
  const sc::program p = hand_made({work}, {100}, {{{}, {0}}, {{0}, {}}, {{}, {0}}, {{0}, {}}});
  CHECK(ov::sim::live_ranges(p) == std::vector<live_range>{{0, 0, 1}, {0, 2, 3}});
  // Writes with no read between them fill one value in parts (a ring's chunks): one range.
  const sc::program parts = hand_made({work}, {100}, {{{}, {0}}, {{}, {0}}, {{0}, {}}});
  CHECK(ov::sim::live_ranges(parts) == std::vector<live_range>{{0, 0, 2}});
  // An op that reads and writes it (an accumulation) continues the value.
  const sc::program sums = hand_made({work}, {100}, {{{}, {0}}, {{0}, {}}, {{0}, {0}}, {{0}, {}}});
  CHECK(ov::sim::live_ranges(sums) == std::vector<live_range>{{0, 0, 3}});
  // Read before any write: the value came from before the step. Written and never read: its writer alone.
  const sc::program given = hand_made({act, work}, {10, 20}, {{{}, {}}, {{0}, {1}}});
  CHECK(ov::sim::live_ranges(given) == std::vector<live_range>{{0, 0, 1}, {1, 1, 1}});
  // State is held through the step, not by its reads and writes: no range.
  const sc::program state = hand_made({weights}, {1000}, {{{0}, {0}}});
  CHECK(ov::sim::live_ranges(state).empty());
  // A buffer index out of range is refused, naming the op.
  sc::program bad = p;
  bad.ops[2].writes = {7};
  CHECK_THROWS_WITH_AS(ov::sim::live_ranges(bad), doctest::Contains("op 2 names buffer 7 of 1"), std::invalid_argument);
}

TEST_CASE("the peak over issue order adds the held state to the most that is alive at once") {
  // Weights 1000 held; a (100) live over ops 0..2, b (30) over 1..3, c (50) over 3..4.
  const sc::program p = hand_made({weights, act, work, work}, {1000, 100, 30, 50},
                                  {{{}, {1}}, {{1}, {2}}, {{1}, {}}, {{2}, {3}}, {{3}, {}}});
  const ov::sim::memory_peak peak = ov::sim::peak_in_issue_order(p);
  CHECK(peak.bytes == 1130);  // ops 1..2: a and b
  CHECK(peak.op == 1);
  CHECK(peak.by_use[use(memory_use::weights)] == 1000);
  CHECK(peak.by_use[use(memory_use::activations)] == 130);
  // A buffer with no size takes nothing; an empty program keeps its state.
  CHECK(ov::sim::peak_in_issue_order(hand_made({weights, act}, {1000}, {{{}, {1}}})).bytes == 1000);
}

TEST_CASE("memory_of: the peak of every program of a step, and the rank that needs the most") {
  sc::program small = hand_made({act}, {100}, {{{}, {0}}, {{0}, {}}});
  sc::program large = hand_made({act}, {300}, {{{}, {0}}, {{0}, {}}});
  small.rank = 4;
  large.rank = 9;
  ov::sim::result ran;
  for (const int rank : {4, 9})
    for (const int op : {0, 1})
      ran.intervals.push_back({.rank = rank, .op = op, .start_us = 1.0 * op, .end_us = op + 1.0});
  const ov::sim::step_memory m = ov::sim::memory_of({small, large}, ran);
  CHECK(m.ranks == std::vector<int>{4, 9});
  REQUIRE(m.peaks.size() == 2);
  CHECK(m.peaks[0].bytes == 100);
  CHECK(m.rank() == 9);
  CHECK(m.peak().bytes == 300);
  CHECK_THROWS_WITH_AS(ov::sim::memory_of({}, ran), "memory_of: the step has no program", std::invalid_argument);
}

TEST_CASE("the peak over a timeline: from the writer's start to the last reader's end") {
  const sc::program p = hand_made({act, work}, {100, 30}, {{{}, {0}}, {{0}, {}}, {{}, {1}}, {{1}, {}}});
  // In issue order a (ops 0..1) and b (ops 2..3) never meet: 100.
  CHECK(ov::sim::peak_in_issue_order(p).bytes == 100);
  // On the GPU op 2 (another stream) starts at 5, before op 1 ends at 8: both alive, 130 at 5 us.
  std::vector<ov::sim::interval> ran{{.op = 0, .start_us = 0, .end_us = 4},
                                     {.op = 1, .start_us = 4, .end_us = 8},
                                     {.op = 2, .start_us = 5, .end_us = 6},
                                     {.op = 3, .start_us = 9, .end_us = 10}};
  ov::sim::memory_peak peak = ov::sim::peak_in_time(p, ran);
  CHECK(peak.bytes == 130);
  CHECK(peak.at_us == 5);
  CHECK(peak.op == 2);
  // Released at an end and allocated at that same time: the release comes first.
  ran[2].start_us = 8;
  ran[2].end_us = 8.5;
  CHECK(ov::sim::peak_in_time(p, ran).bytes == 100);
  // The curve: a from 0 to 8, b from 8 to 10.
  CHECK(ov::sim::memory_curve(p, ran) == std::vector<ov::sim::memory_point>{{0, 100}, {8, 30}, {10, 0}});
  // Times that do not run forward from 0 are refused.
  ran[2].end_us = 7;
  CHECK_THROWS_WITH_AS(ov::sim::peak_in_time(p, ran), doctest::Contains("op 2 of rank 0 runs from 8"),
                       std::invalid_argument);
  // Another rank's intervals are skipped. Ops 1 and 3 never ran (a hang): a and b hold on to
  // the end of what ran (4 us), so both are alive from 2 us.
  const std::vector<ov::sim::interval> hung{{.op = 0, .start_us = 0, .end_us = 4},
                                            {.op = 2, .start_us = 2, .end_us = 3},
                                            {.rank = 3, .op = 99, .start_us = 0, .end_us = 50}};
  peak = ov::sim::peak_in_time(p, hung);
  CHECK(peak.bytes == 130);
  CHECK(peak.at_us == 2);
  // An interval naming an op the program has not is refused.
  CHECK_THROWS_WITH_AS(ov::sim::peak_in_time(p, std::vector<ov::sim::interval>{{.op = 9}}),
                       doctest::Contains("names op 9 of 4"), std::invalid_argument);
}

TEST_CASE("a layer keeps Korthikanti's activations, less dropout masks and scores: 32 sbh/t + 4 asb/t") {
  // Korthikanti et al. (MLSys 2023) count sbh(34 + 5as/h) bytes a layer without parallelism and
  // sbh(34/t) + 5as^2b/t with tensor and sequence parallelism. They keep two dropout masks (2 sbh)
  // that these recipes do not have (dropout 0), and the scores, softmax and its dropout mask
  // (5 as^2 b) where flash attention keeps the softmax's log-sum-exp (4 bytes a row and head:
  // 4 asb). With SwiGLU at ffn = 8h/3, fc1's output (2 ffn) and the SwiGLU's (ffn) are 16 sbh
  // bytes, as GeLU's 4h input and output are. So with multi-head attention: 32 sbh/t + 4 asb/t.
  const sc::workload w = multi_head();
  const std::int64_t s = 128, h = 384, a = 6;
  using tp1 = ov::config<ov::dp<2>, bf16>;
  using tp2 = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<2>, bf16>;
  const auto one = tp1::schedule::generate(w);
  const auto two = tp2::schedule::generate(w);
  INFO(ov::verify::verify_report(two));
  REQUIRE(ov::verify::verify(two).empty());
  CHECK(kept_across(one[0], 0, 0) == s * (32 * h + 4 * a));
  CHECK(kept_across(one[0], 1, 1) == s * (32 * h + 4 * a));
  CHECK(kept_across(two[0], 0, 0) == s * (32 * h + 4 * a) / 2);
  CHECK(kept_across(two[1], 1, 0) == s * (32 * h + 4 * a) / 2);
  // With grouped-query attention k and v shrink: q 4 x 64, k and v 2 x 64 each a token, 512
  // columns where multi-head attention has 768 (small_gqa: h 256, ffn 512, 4 heads, 2 groups):
  // x, both norms' outputs, the attention's output and the MLP's input 5 x 2h, q k v 2 x 512,
  // the log-sum-exp 4 x 4, fc1's output and the SwiGLU's 6 x 512.
  CHECK(kept_across(tp1::schedule::generate(small_gqa())[0], 0, 0) == 128 * (10 * 256 + 2 * 512 + 16 + 6 * 512));
}

TEST_CASE("recompute: full keeps a layer's input alone (2 sbh/t), selective drops the attention's output") {
  const sc::workload w = multi_head();
  const std::int64_t s = 128, h = 384;
  using full =
      ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<2>, bf16, ov::recompute_granularity<ov::granularity::full>,
                 ov::recompute_method<ov::recompute::uniform>, ov::recompute_num_layers<1>>;
  const auto f = full::schedule::generate(w);
  REQUIRE(ov::verify::verify(f).empty());
  CHECK(kept_across(f[0], 0, 0) == 2 * s * h / 2);  // Korthikanti: 2 sbh/t a layer
  CHECK(kept_across(f[0], 1, 1) == 2 * s * h / 2);
  // Selective (core attention): Korthikanti's form is 34 sbh/t, the scores recomputed; flash
  // attention recomputes its output and log-sum-exp: 30 sbh/t here.
  using selective = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<2>, bf16,
                               ov::recompute_granularity<ov::granularity::selective>>;
  const auto sel = selective::schedule::generate(w);
  REQUIRE(ov::verify::verify(sel).empty());
  CHECK(kept_across(sel[0], 0, 0) == 30 * s * h / 2);
  // And the peak falls with each: none > selective > full.
  using none = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<2>, bf16>;
  const std::int64_t peak_none = ov::sim::peak_in_issue_order(none::schedule::generate(w)[0]).bytes;
  const std::int64_t peak_sel = ov::sim::peak_in_issue_order(sel[0]).bytes;
  const std::int64_t peak_full = ov::sim::peak_in_issue_order(f[0]).bytes;
  CHECK(peak_none > peak_sel);
  CHECK(peak_sel > peak_full);
}

TEST_CASE("1F1B: stage i holds pp - i micro-batches, interleaved: its warm-up plus one") {
  sc::workload w = small_gqa();
  w.num_layers = 4;
  w.micro_batches = 8;
  const auto step = ov::config<ov::pp<4>, bf16>::schedule::generate(w);
  REQUIRE(ov::verify::verify(step).empty());
  for (int stage = 0; stage < 4; ++stage)
    CHECK(most_in_flight(step[static_cast<std::size_t>(stage)], {stage}).first == 4 - stage);
  // pp 4, vpp 2, 8 micro-batches: rank r holds layers r and r + 4. Megatron's warm-up is
  // 2 (pp - r - 1) + (vpp - 1) pp forwards, 10 on rank 0 and 4 on rank 3; the first backward
  // comes after one more. With overlap_p2p_comm the receive of the next forward's input is
  // posted before that backward: one more input held.
  w.num_layers = 8;
  using plain = ov::config<ov::pp<4>, ov::vpp<2>, ov::overlap_p2p_comm<false>, bf16>;
  using ahead = ov::config<ov::pp<4>, ov::vpp<2>, ov::overlap_p2p_comm<>, bf16>;
  const auto interleaved = plain::schedule::generate(w), posted = ahead::schedule::generate(w);
  REQUIRE(ov::verify::verify(interleaved).empty());
  for (int r = 0; r < 4; ++r) {
    const auto at = static_cast<std::size_t>(r);
    CHECK(most_in_flight(interleaved[at], {r, r + 4}).first == 2 * (4 - r - 1) + 4 + 1);
    CHECK(most_in_flight(posted[at], {r, r + 4}).first == 2 * (4 - r - 1) + 4 + 2);
  }
}

TEST_CASE("EP overlap holds a second micro-batch's layer while the first's backward runs") {
  using plain = ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<4>, bf16,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>>;
  using overlapped =
      ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<4>, bf16,
                 ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>>;
  sc::workload w = small_gqa();
  w.moe_router_topk = 2;
  w.moe_ffn_hidden_size = 512;
  w.micro_batches = 4;
  const auto a = plain::schedule::generate(w), b = overlapped::schedule::generate(w);
  REQUIRE(ov::verify::verify(b).empty());
  // One micro-batch at a time without it; with it the next one's forward starts before the
  // backward of the one before has freed its layers.
  CHECK(most_in_flight(a[0], {0, 1}).second == 1);
  CHECK(most_in_flight(b[0], {0, 1}).second == 2);
  // Each MoE layer keeps (small_gqa, 128 tokens, top-2, 4 experts of 512, bf16): attention as a
  // dense layer's (x, q k v, the norm's output, the attention's output and the log-sum-exp, the
  // MLP's input: 128 x (4 x 2 x 256 + 2 x 512 + 16)), the router's fp32 scores and its norm's
  // output (128 x (4 x 4 + 2 x 256)), the dispatched rows (2 x 128 x 2 x 256), the experts' fc1
  // and SwiGLU outputs (2 x 128 x 3 x 2 x 512).
  const std::int64_t layer = 128 * (8 * 256 + 1024 + 16) + 128 * (16 + 512) + 2 * 128 * 512 + 2 * 128 * 3 * 1024;
  CHECK(kept_across(a[0], 0, 0) == layer);
  CHECK(kept_across(b[0], 1, 2) == layer);
  // At the peak the overlapped step holds more, by at most one layer of the second micro-batch.
  const std::int64_t more = ov::sim::peak_in_issue_order(b[0]).bytes - ov::sim::peak_in_issue_order(a[0]).bytes;
  CHECK(more > 0);
  CHECK(more <= layer);
}

TEST_CASE("communication buffers: TP userbuffers held through the step, gathered inputs inside them") {
  // small_gqa, tp 2: TE's userbuffer of each overlapped slot is [tokens, hidden] = 128 x 256 x 2.
  using overlapped = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, bf16>;
  const auto step = overlapped::schedule::generate(small_gqa());
  REQUIRE(ov::verify::verify(step).empty());
  const sc::program& p = step[0];
  int userbuffers = 0;
  std::int64_t gathered = 0;
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    if (p.buffers[b].kind == sc::buffer_kind::userbuffer) {
      ++userbuffers;
      CHECK(p.buffer_bytes[b] == 128 * 256 * 2);
    }
    if (p.buffers[b].kind == sc::buffer_kind::gathered || p.buffers[b].kind == sc::buffer_kind::ring_chunk)
      gathered += p.buffer_bytes[b];
  }
  CHECK(userbuffers == 10);  // every slot overlapped by TE's defaults
  CHECK(gathered == 0);
  const ov::sim::memory_peak peak = ov::sim::peak_in_issue_order(p);
  CHECK(peak.by_use[use(memory_use::communication)] == 10 * 128 * 256 * 2);
  // Without TP overlap NCCL gathers into tensors of their own: the whole sequence, 128 x 256 x 2.
  const auto plain = ov::config<ov::tp<2>, ov::sequence_parallel<>, bf16>::schedule::generate(small_gqa());
  for (std::size_t b = 0; b < plain[0].buffers.size(); ++b)
    if (plain[0].buffers[b].kind == sc::buffer_kind::gathered) CHECK(plain[0].buffer_bytes[b] == 128 * 256 * 2);
}

TEST_CASE("the loss keeps its fp32 softmax over the rank's vocabulary, routed tokens are top-k rows") {
  using tp2 = ov::config<ov::tp<2>, ov::sequence_parallel<>, bf16>;
  const auto step = tp2::schedule::generate(small_gqa());
  for (std::size_t b = 0; b < step[0].buffers.size(); ++b)
    if (step[0].buffers[b].kind == sc::buffer_kind::loss) CHECK(step[0].buffer_bytes[b] == 128 * 500 * 4);
  using moe = ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<4>, bf16,
                         ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>>;
  sc::workload w = small_gqa();
  w.moe_router_topk = 2;
  w.moe_ffn_hidden_size = 512;
  const auto routed = moe::schedule::generate(w);
  int tokens = 0;
  for (std::size_t b = 0; b < routed[0].buffers.size(); ++b)
    if (routed[0].buffers[b].kind == sc::buffer_kind::tokens) {
      ++tokens;
      CHECK(routed[0].buffer_bytes[b] == 128 * 2 * 256 * 2);
    }
  CHECK(tokens > 0);
}

TEST_CASE("fp8 GEMMs keep their inputs in a byte: the norms' outputs, the projection's and fc2's") {
  // small_gqa at tp 1: bf16 keeps the norm's output (2 h), the SwiGLU's output (2 ffn) in two
  // bytes; fp8 in one, and the projection keeps its own fp8 copy of the attention's output (h).
  using native = ov::config<ov::dp<2>, bf16>;
  using quantized = ov::config<ov::dp<2>, bf16, ov::fp8<>>;
  const std::int64_t bf = kept_across(native::schedule::generate(small_gqa())[0], 0, 0);
  const std::int64_t q = kept_across(quantized::schedule::generate(small_gqa())[0], 0, 0);
  CHECK(bf - q == 128 * (2 * 256 + 512 - 256));
}

TEST_CASE("the timelines show memory: Perfetto counters per rank, a lane in the picture") {
  using tp2 = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, bf16>;
  const auto step = tp2::schedule::generate(small_gqa());
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  const ov::sim::result r = ov::sim::simulate(step, h100);
  std::ostringstream trace, svg;
  ov::trace::write_chrome_trace(trace, step, r);
  CHECK(trace.str().find(R"("name":"memory","ph":"C","pid":1,"ts":0,"args":{"GB":)") != std::string::npos);
  ov::trace::write_svg_timeline(svg, step, r);
  const std::int64_t peak =
      std::max(ov::sim::peak_in_time(step[0], r.intervals).bytes, ov::sim::peak_in_time(step[1], r.intervals).bytes);
  CHECK(svg.str().find("<polygon class=\"memory\"") != std::string::npos);
  CHECK(svg.str().find("peak " + ov::trace::detail::px(static_cast<double>(peak) / 1e9) + " GB") != std::string::npos);
  // A program whose sizes the analysis refuses has no counter and no lane; the rest is drawn.
  auto bad = step;
  bad[0].buffer_bytes[0] = -1;
  bad[1].buffer_bytes[0] = -1;
  std::ostringstream bad_trace, bad_svg;
  ov::trace::write_chrome_trace(bad_trace, bad, r);
  ov::trace::write_svg_timeline(bad_svg, bad, r);
  CHECK(bad_trace.str().find(R"("name":"memory")") == std::string::npos);
  CHECK(bad_svg.str().find("class=\"memory\"") == std::string::npos);
  CHECK(bad_svg.str().find("class=\"op\"") != std::string::npos);
}

TEST_CASE("MLA's latents, gathered for the qkv slot, live to the recompute of the up projections") {
  // Latents 64 + 32 + 16 = 112 wide over the whole sequence (128 tokens, bf16): outside the qkv
  // slot's userbuffer, which the next layer reuses, and alive into the backward.
  const sc::workload w = test_queries::small_mla();
  using again =
      ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, bf16,
                 ov::recompute_granularity<ov::granularity::selective>, ov::recompute_modules<ov::module::mla_up_proj>>;
  using plain = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, bf16>;
  const auto step = again::schedule::generate(w);
  REQUIRE(ov::verify::verify(step).empty());
  const sc::buffer latents{
      .kind = sc::buffer_kind::gathered, .of = sc::op_type::qkv_fprop, .at = {.layer = 0, .micro_batch = 0}};
  const auto bytes_of = [&](const sc::program& p) {
    const auto i = static_cast<std::size_t>(std::find(p.buffers.begin(), p.buffers.end(), latents) - p.buffers.begin());
    REQUIRE(i < p.buffers.size());
    return p.buffer_bytes[i];
  };
  CHECK(bytes_of(step[0]) == 128 * 112 * 2);
  CHECK(bytes_of(plain::schedule::generate(w)[0]) == 0);  // inside the userbuffer
}

TEST_CASE("ep_overlap_early_attn_memory_release: attention backward before the experts, freed sooner") {
  using later =
      ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<4>, bf16,
                 ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>>;
  using early = ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<4>, bf16,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::ep_overlap_early_attn_memory_release<>>;
  sc::workload w = small_gqa();
  w.moe_router_topk = 2;
  w.moe_ffn_hidden_size = 512;
  w.micro_batches = 4;
  w.num_layers = 4;
  const auto a = later::schedule::generate(w), b = early::schedule::generate(w);
  REQUIRE(ov::verify::verify(b).empty());
  // Micro-batch 1's forward of layer 3 pairs with 0's backward of layer 0 (the backward runs the
  // last layer first): upstream puts 0's attention backward (its qkv dgrad) after 1's experts by
  // default, before them with the flag.
  const sc::op_key experts{.type = sc::op_type::experts_fprop, .at = {.layer = 3, .micro_batch = 1}};
  const sc::op_key attention{.type = sc::op_type::qkv_dgrad, .at = {.layer = 0, .micro_batch = 0}};
  CHECK(test_queries::index_of(a[0], attention) > test_queries::index_of(a[0], experts));
  CHECK(test_queries::index_of(b[0], attention) < test_queries::index_of(b[0], experts));
  // When micro-batch 1's experts allocate, 0's attention tensors of that layer are gone: less is
  // alive there (over issue order). Here the peak is elsewhere, at the expert dgrad earlier in
  // the pair, which both orders share: the flag does not lower it.
  const auto live_at = [](const sc::program& p, std::size_t op) {
    std::int64_t bytes = 0;
    for (const live_range& r : ov::sim::live_ranges(p))
      if (static_cast<std::size_t>(r.first) <= op && op <= static_cast<std::size_t>(r.last))
        bytes += p.buffer_bytes[static_cast<std::size_t>(r.buffer)];
    return bytes;
  };
  const std::int64_t kept_a = live_at(a[0], test_queries::index_of(a[0], experts));
  const std::int64_t kept_b = live_at(b[0], test_queries::index_of(b[0], experts));
  // Freed early: micro-batch 0's layer-0 attention tensors (its input, q k v with the norm's
  // output, the attention's output and log-sum-exp, the MLP's input: as in the EP overlap test
  // above), the router's scores and norm output, and the dispatched gradient rows the
  // unpermutation reads (2 x 128 x 256 x 2); made early: the input's gradient (128 x 256 x 2).
  const std::int64_t freed = 128 * (8 * 256 + 1024 + 16) + 128 * (16 + 512) + 2 * 128 * 256 * 2;
  CHECK(kept_a - kept_b == freed - 128 * 256 * 2);
  CHECK(ov::sim::peak_in_issue_order(b[0]).bytes == ov::sim::peak_in_issue_order(a[0]).bytes);
  // And the simulator runs it.
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  CHECK_FALSE(ov::sim::simulate(b, h100).deadlock);
}
