// Every input of issue 12, through the public entry points: each gets a clear error (the
// message is checked), never a crash, a hang or a silent result. Cases the typed step program
// made impossible (op names, a workload expert count, num_buffers) have no test; see the README's
// contracts.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/analysis/bound.hpp>
#include <overlap/sim/cost/measured_cost.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;
namespace sim = overlap::sim;

namespace {

using dense_pp2 = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<2>, ov::precision<ov::dtype::bf16>>;
using moe_ep2 = ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<8>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>>;
using tp_overlap =
    ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::precision<ov::dtype::bf16>>;

sc::workload small() {
  return {.num_layers = 4,
          .micro_batches = 4,
          .seq_length = 256,
          .hidden_size = 256,
          .ffn_hidden_size = 512,
          .num_attention_heads = 4,
          .vocab_size = 1024};
}
sc::workload small_moe() {
  sc::workload w = small();
  w.moe_router_topk = 2;
  w.moe_ffn_hidden_size = 256;
  return w;
}

/// compose_step's message for `s` and `w`, or "" when it composes (`r`: derive(s) when valid).
std::string compose_error(const ov::settings& s, const ov::resolved_settings& r, const sc::workload& w) {
  try {
    (void)sc::compose_step(s, r, w);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
std::string compose_error(const ov::settings& s, const sc::workload& w) {
  const auto checked = ov::validate(s);
  return compose_error(s, checked.resolved.value_or(ov::resolved_settings{}), w);
}

}  // namespace

TEST_CASE("compose_step: a workload size that is not positive is an error, never an empty step") {
  const ov::settings s = dense_pp2::settings;
  const auto bad = [&](auto edit) {
    sc::workload w = small();
    edit(w);
    const std::string e = compose_error(s, w);
    CHECK(e.starts_with("compose_step: "));
    return e;
  };
  const std::string positive = "workload sizes must be positive";
  CHECK(bad([](sc::workload& w) { w.micro_batches = -2; }).find(positive) != std::string::npos);
  CHECK(bad([](sc::workload& w) { w.hidden_size = -256; }).find(positive) != std::string::npos);
  CHECK(bad([](sc::workload& w) { w.num_layers = 0; }).find(positive) != std::string::npos);
  CHECK(bad([](sc::workload& w) { w.micro_batches = 0; }).find(positive) != std::string::npos);
  CHECK(bad([](sc::workload& w) { w.hidden_size = 0; }).find(positive) != std::string::npos);
  CHECK(bad([](sc::workload& w) { w.seq_length = 0; }).find(positive) != std::string::npos);
  CHECK(bad([](sc::workload& w) { w.num_layers = -4; }).find(positive) != std::string::npos);
  CHECK(bad([](sc::workload& w) { w.moe_router_topk = -2; }).find("moe_router_topk") != std::string::npos);
}

TEST_CASE("compose_step: sizes whose byte counts overflow 64 bits are refused") {
  const ov::settings s = dense_pp2::settings;
  sc::workload w = small();
  w.hidden_size = INT_MAX;
  w.vocab_size = INT_MAX;
  w.kv_channels = 64;
  CHECK(compose_error(s, w).find("byte counts do not fit in 64 bits: the model's parameters") != std::string::npos);
  w = small();
  w.seq_length = w.micro_batch_size = INT_MAX;
  CHECK(compose_error(s, w).find("byte counts do not fit in 64 bits: one micro-batch's activations") !=
        std::string::npos);

  ov::settings many = moe_ep2::settings;
  many.num_moe_experts = 1 << 30;
  w = small_moe();
  w.moe_ffn_hidden_size = 1 << 30;
  CHECK(compose_error(many, w).find("byte counts do not fit in 64 bits: the model's parameters") != std::string::npos);
}

TEST_CASE("compose_step: the optimizer's 16 bytes per parameter are in the 64-bit check (fuzz find)") {
  // compose_step_fuzz: 2^59 parameters passed a check at 8 bytes per parameter, then the
  // optimizer step's 16 bytes of Adam state per parameter overflowed (signed overflow, UBSan).
  using one = ov::config<ov::precision<ov::dtype::bf16>>;
  const sc::workload w{.num_layers = 1,
                       .micro_batches = 1,
                       .seq_length = 1,
                       .hidden_size = 1 << 29,
                       .ffn_hidden_size = 1,
                       .num_attention_heads = 1,
                       .kv_channels = 1,
                       .vocab_size = 1 << 29};
  CHECK(compose_error(one::settings, one::resolved, w)
            .find("byte counts do not fit in 64 bits: the model's parameters") != std::string::npos);
}

TEST_CASE("compose_step: a hidden size of INT_MAX is a valid, huge step: 64-bit counts, no overflow") {
  sc::workload w = small();
  w.hidden_size = INT_MAX;
  w.kv_channels = 64;
  const auto step = sc::compose_step(dense_pp2::settings, dense_pp2::resolved, w);
  REQUIRE(step.size() == 4);
  for (const auto& p : step)
    for (const auto& o : p.ops) {
      CHECK(o.bytes >= 0);
      CHECK(o.memory_bytes >= 0);
      CHECK(std::isfinite(o.flops));
    }
  CHECK(ov::verify::verify(step).empty());
}

TEST_CASE("compose_step: a GEMM size beyond 2^31 is refused, naming the sizes that make it (fuzz find)") {
  // compose_step_fuzz: heads x v_head_dim of MLA, a vocabulary or an FFN near 2^31 made GEMMs
  // that verify() rejects.
  sc::workload w = small();
  w.multi_latent_attention = true;
  w.kv_lora_rank = 8;
  w.qk_head_dim = 8;
  w.qk_pos_emb_head_dim = 8;
  w.v_head_dim = 1 << 28;
  CHECK(compose_error(dense_pp2::settings, w).find("GEMM size") == std::string::npos);
  w.v_head_dim = 1 << 29;  // 4 heads' keys and values: 2^31 + 128
  CHECK(compose_error(dense_pp2::settings, w)
            .find("a GEMM size is beyond 2^31: the query, key and value width = 2147483776") != std::string::npos);
  w = small();
  w.ffn_hidden_size = 1 << 30;
  CHECK(compose_error(dense_pp2::settings, w).find("2 x ffn_hidden_size = 2147483648") == std::string::npos);
  w.ffn_hidden_size = (1 << 30) + 1;
  CHECK(compose_error(dense_pp2::settings, w).find("a GEMM size is beyond 2^31: 2 x ffn_hidden_size = 2147483650") !=
        std::string::npos);
}

TEST_CASE("compose_step: a step too large to generate is refused before it exhausts memory") {
  sc::workload w = small();
  w.num_layers = 1 << 20;
  w.micro_batches = 1 << 20;
  CHECK(compose_error(dense_pp2::settings, w).find("the step is too large to generate") != std::string::npos);
}

TEST_CASE("compose_step: MoE sizes that disagree with the settings are errors") {
  ov::settings seven = moe_ep2::settings;
  seven.num_moe_experts = 7;  // not divisible by ep 2
  CHECK(compose_error(seven, small_moe()).find("[L-4] ") != std::string::npos);
  sc::workload w = small_moe();
  w.moe_router_topk = 9;
  CHECK(compose_error(moe_ep2::settings, w).find("moe_router_topk (9) must be in 1..num_moe_experts (8)") !=
        std::string::npos);
  w.moe_router_topk = -2;
  CHECK(compose_error(moe_ep2::settings, w).find("moe_router_topk") != std::string::npos);
  sc::workload dense = small();
  dense.moe_router_topk = 2;  // top-k without experts is not silently dense
  CHECK(compose_error(dense_pp2::settings, dense).find("num_moe_experts is not") != std::string::npos);
}

TEST_CASE("compose_step: settings that validate() rejects are errors naming each [ID]") {
  const auto rejected = [](auto edit, const char* id) {
    ov::settings s = dense_pp2::settings;
    edit(s);
    // The resolved settings of the valid config: an invalid one has none.
    const std::string e = compose_error(s, dense_pp2::resolved, small());
    CAPTURE(e);
    CHECK(e.find(std::string("[") + id + "] ") != std::string::npos);
  };
  rejected([](ov::settings& s) { s.tensor_model_parallel_size = 0; }, "OPT-3");
  rejected([](ov::settings& s) { s.pipeline_model_parallel_size = 0; }, "OPT-3");
  rejected([](ov::settings& s) { s.virtual_pipeline_model_parallel_size = 0; }, "OPT-3");
  rejected([](ov::settings& s) { s.virtual_pipeline_model_parallel_size = -2; }, "OPT-3");
  rejected([](ov::settings& s) { s.expert_model_parallel_size = 0; }, "OPT-3");
  rejected([](ov::settings& s) { s.data_parallel_size = -8; }, "OPT-3");
  rejected([](ov::settings& s) { s.precision = static_cast<ov::dtype>(99); }, "OPT-3");
  rejected([](ov::settings& s) { s.tensor_model_parallel_size = INT_MAX; }, "L-5");

  ov::settings splits = tp_overlap::settings;
  ov::ub::user_config cfg;
  cfg.slots[ov::ub::slot_id::proj_fprop] =
      ov::ub::slot{.method = ov::ub::method::pipeline, .num_sm = 16, .cga_size = 2, .num_splits = 0};
  splits.tp_comm_overlap_cfg = cfg;
  CHECK(compose_error(splits, tp_overlap::resolved, small()).find("[TE-7] ") != std::string::npos);

  // One exception lists every problem: a rule of the table and a workload size.
  ov::settings both = dense_pp2::settings;
  both.tp_comm_overlap = true;
  both.sequence_parallel = false;
  sc::workload w = small();
  w.hidden_size = -1;
  const std::string e = compose_error(both, dense_pp2::resolved, w);
  CHECK(e.find("compose_step: 2 problems: [TP-2] ") == 0);
  CHECK(e.find("workload sizes must be positive") != std::string::npos);
}

TEST_CASE("compose_step: resolved settings that are not the settings' own are an error") {
  ov::resolved_settings other = dense_pp2::resolved;
  other.batch_p2p_comm = !other.batch_p2p_comm;
  CHECK(compose_error(dense_pp2::settings, other, small()).find("not derive(settings)") != std::string::npos);
}

TEST_CASE("cfg::schedule::generate checks the workload as compose_step does") {
  sc::workload w = small();
  w.micro_batches = -2;
  CHECK_THROWS_WITH_AS(dense_pp2::schedule::generate(w), doctest::Contains("workload sizes must be positive"),
                       std::invalid_argument);
}

TEST_CASE("validate: world size and num_splits have upper bounds") {
  ov::settings s = dense_pp2::settings;
  s.tensor_model_parallel_size = INT_MAX;
  CHECK(ov::validate(s).violates("L-5"));
  s = dense_pp2::settings;
  s.tensor_model_parallel_size = s.data_parallel_size = 65536;
  CHECK(ov::validate(s).violates("L-5"));
  s.data_parallel_size = 8;  // 8192 x 8 x 2 = 131,072 ranks: the bound itself
  s.tensor_model_parallel_size = 8192;
  CHECK_FALSE(ov::validate(s).violates("L-5"));
  s.tensor_model_parallel_size = 16384;
  CHECK(ov::validate(s).violates("L-5"));
  s.tensor_model_parallel_size = 8;  // 128 ranks
  CHECK_FALSE(ov::validate(s).violates("L-5"));

  ov::settings t = tp_overlap::settings;
  ov::ub::user_config cfg;
  cfg.slots[ov::ub::slot_id::proj_fprop] =
      ov::ub::slot{.method = ov::ub::method::pipeline, .num_sm = 16, .cga_size = 2, .num_splits = 1 << 30};
  t.tp_comm_overlap_cfg = cfg;
  CHECK(ov::validate(t).violates("TE-8"));
  cfg.slots[ov::ub::slot_id::proj_fprop]->num_splits = 64;
  t.tp_comm_overlap_cfg = cfg;
  CHECK(ov::validate(t).ok());
}

namespace {

sc::op compute(double flops = 1e6) {
  return sc::op{.kind = sc::op_kind::compute, .stream = 0, .key = {.type = sc::op_type::fc1_fprop}, .flops = flops};
}
sc::op all_reduce(std::int64_t bytes = 1024, sc::collective c = sc::collective::all_reduce) {
  return sc::op{.kind = sc::op_kind::collective,
                .stream = 0,
                .key = {.type = sc::op_type::dp_grad_reduce},
                .coll = c,
                .comm = 0,
                .seq = 0,
                .bytes = bytes};
}
/// Two ranks that each compute and then all-reduce over "dp" {0, 1}.
std::vector<sc::program> pair_step() {
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank) {
    sc::program p;
    p.rank = rank;
    p.streams = {{sc::stream_role::compute, 0}};
    p.comms = {{"dp", {0, 1}}};
    p.ops = {compute(), all_reduce()};
    step.push_back(p);
  }
  return step;
}

/// The findings' reasons, one per line.
std::string findings(const std::vector<sc::program>& step) { return ov::verify::verify_report(step); }

std::string simulate_error(const std::vector<sc::program>& step, const sim::cost_model& cost) {
  try {
    (void)sim::simulate(step, cost);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("verify: a malformed program is findings, never an exception") {
  REQUIRE(findings(pair_step()).empty());
  auto events = pair_step();
  events[0].num_events = -1;
  CHECK(findings(events).find("rank 0: num_events is -1") != std::string::npos);
  auto kind = pair_step();
  kind[1].ops[0].kind = static_cast<sc::op_kind>(42);
  CHECK(findings(kind).find("op kind 42 does not exist") != std::string::npos);
  auto coll = pair_step();
  coll[0].ops[1].coll = static_cast<sc::collective>(9);
  CHECK(findings(coll).find("collective 9 does not exist") != std::string::npos);
  auto bytes = pair_step();
  bytes[0].ops[1].bytes = -1;
  CHECK(findings(bytes).find("negative or non-finite size") != std::string::npos);
  auto members = pair_step();
  members[1].comms[0].ranks = {1, 0};
  CHECK(findings(members).find("communicator dp has members {1,0} here but {0,1} on rank 0") != std::string::npos);
  auto twice = pair_step();
  twice[1].rank = 0;
  twice[1].comms[0].ranks = {0, 0};
  const std::string both = findings(twice);
  CHECK(both.find("two programs for rank 0") != std::string::npos);
  CHECK(both.find("communicator dp lists a rank twice") != std::string::npos);
  auto negative = pair_step();
  negative[0].rank = -1;
  CHECK_NOTHROW((void)findings(negative));
  CHECK(findings(negative).find("rank -1 is negative") != std::string::npos);
}

TEST_CASE("simulate: what verify's structure check rejects is an invalid_argument, never a hang or UB") {
  const sim::analytic_cost_model h100(sim::h100_node());
  REQUIRE(simulate_error(pair_step(), h100).empty());
  auto nan = pair_step();
  nan[0].ops[0].flops = std::numeric_limits<double>::quiet_NaN();
  CHECK(simulate_error(nan, h100).find("negative or non-finite size") != std::string::npos);
  auto negative = pair_step();
  negative[0].ops[0].flops = -1e15;
  CHECK(simulate_error(negative, h100).find("negative or non-finite size") != std::string::npos);
  auto stream = pair_step();
  stream[0].ops[0].stream = 7;
  CHECK(simulate_error(stream, h100).find("stream 7 does not exist") != std::string::npos);
  auto peer = pair_step();
  for (auto& p : peer)
    p.ops[1] = sc::op{
        .kind = p.rank == 0 ? sc::op_kind::send : sc::op_kind::recv, .stream = 0, .comm = 0, .peer = 5, .bytes = 8};
  CHECK(simulate_error(peer, h100).find("peer 5 is not another rank of dp") != std::string::npos);
  auto event = pair_step();
  event[0].ops.push_back(sc::op{.kind = sc::op_kind::record, .stream = 0, .event = 3});
  CHECK(simulate_error(event, h100).find("event 3 does not exist") != std::string::npos);
  auto members = pair_step();
  members[1].comms[0].ranks = {1, 0};
  CHECK(simulate_error(members, h100).find("communicator dp has members") != std::string::npos);
  CHECK_THROWS_WITH_AS((void)sim::lower_bound(nan, h100), doctest::Contains("non-finite"), std::invalid_argument);
}

TEST_CASE("a GEMM shape out of range and key fields out of range are refused by every backend, by name") {
  // GEMMs beyond 2^31 a side overflowed the cost model's tile count (m = n = 2^40, k = 128), or its
  // rounding (m = INT64_MAX); m = -128 passed as a GEMM; a coordinate of -7 or INT_MIN, a slot that
  // is no TP GEMM or no op type at all passed verify (and op_type(250) as a slot was named as the
  // op's type).
  const sim::analytic_cost_model h100(sim::h100_node());
  struct bad_case {
    const char* what;
    void (*apply)(sc::op&);
    const char* message;
  };
  const bad_case cases[] = {
      {"2^40 x 2^40 x 128",
       [](sc::op& o) {
         o.gemm = {std::int64_t{1} << 40, std::int64_t{1} << 40, 128, 1};
       },
       "GEMM shape 1099511627776 x 1099511627776 x 128 in 1 group(s)"},
      {"INT64_MAX",
       [](sc::op& o) {
         o.gemm = {std::numeric_limits<std::int64_t>::max(), 128, 128, 1};
       },
       "GEMM shape 9223372036854775807 x 128 x 128"},
      {"m = -128",
       [](sc::op& o) {
         o.gemm = {-128, 128, 128, 1};
       },
       "GEMM shape -128 x 128 x 128"},
      {"k = 0 alone",
       [](sc::op& o) {
         o.gemm = {128, 128, 0, 1};
       },
       "all 0 (none) or all in 1..2^31"},
      {"no group",
       [](sc::op& o) {
         o.gemm = {128, 128, 128, 0};
       },
       "groups in 1..2^31"},
      {"layer -7", [](sc::op& o) { o.key.at.layer = -7; }, "key coordinate l is -7"},
      {"micro-batch INT_MIN", [](sc::op& o) { o.key.at.micro_batch = INT_MIN; }, "key coordinate mb is -2147483648"},
      {"slot dp_grad_reduce", [](sc::op& o) { o.key.slot = sc::op_type::dp_grad_reduce; },
       "slot dp_grad_reduce is not a GEMM of a TP layer"},
      {"slot 250", [](sc::op& o) { o.key.slot = static_cast<sc::op_type>(250); }, "slot 250 is no op type"},
  };
  for (const bad_case& c : cases) {
    CAPTURE(c.what);
    auto step = pair_step();
    c.apply(step[0].ops[0]);
    CHECK(findings(step).find(c.message) != std::string::npos);
    CHECK(simulate_error(step, h100).find(c.message) != std::string::npos);
  }
  // In range, the largest shape simulates: 2^31 a side.
  auto largest = pair_step();
  largest[0].ops[0].gemm = {std::int64_t{1} << 31, std::int64_t{1} << 31, std::int64_t{1} << 31, 1};
  CHECK(findings(largest).empty());
  CHECK(simulate_error(largest, h100).empty());
}

TEST_CASE("structure_check: its quick test passes no op that the rule-by-rule check finds a problem with") {
  // A program with every kind of op (an NCCL group, events, host syncs), of which each round breaks
  // one or two fields of random ops (values out of range, negative, non-finite, or valid but
  // elsewhere): accepts (quick test first) and explain (every rule) must find the same problems.
  sc::program base;
  base.rank = 1;
  base.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::pp_send, -1}};
  base.comms = {{"dp", {0, 1}}, {"pp", {1, 2}}, {"other", {0, 2}}};
  base.num_events = 2;
  base.buffers.resize(3);
  base.ops = {compute(),
              all_reduce(),
              {.kind = sc::op_kind::record, .stream = 0, .event = 0},
              {.kind = sc::op_kind::wait, .stream = 1, .event = 0},
              {.kind = sc::op_kind::send, .stream = 1, .comm = 1, .peer = 1, .bytes = 64, .group = 3},
              {.kind = sc::op_kind::recv, .stream = 1, .comm = 1, .peer = 1, .bytes = 64, .group = 3},
              {.kind = sc::op_kind::host_sync, .event = 0},
              {.kind = sc::op_kind::host_sync},
              {.kind = sc::op_kind::compute, .stream = 0, .reads = {0, 1}, .writes = {2}}};
  REQUIRE(sc::structure_problems(base).empty());
  std::uint64_t state = 7;
  const auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  const int ints[] = {-2, -1, 0, 1, 2, 3, 7, INT_MAX};
  const double doubles[] = {
      0.0, -0.0, 1e6, -1.0, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  int rounds_with_problems = 0;
  for (int round = 0; round < 20000; ++round) {
    sc::program p = base;
    for (int change = 0; change < 1 + static_cast<int>(next(2)); ++change) {
      sc::op& o = p.ops[next(p.ops.size())];
      const int v = ints[next(std::size(ints))];
      const std::int64_t sizes[] = {0,
                                    1,
                                    4096,
                                    -128,
                                    std::int64_t{1} << 31,
                                    (std::int64_t{1} << 31) + 1,
                                    std::numeric_limits<std::int64_t>::max()};
      const auto size = [&] { return sizes[next(std::size(sizes))]; };
      switch (next(17)) {
        case 0: o.kind = static_cast<sc::op_kind>(next(9)); break;
        case 1: o.stream = v; break;
        case 2: o.comm = v; break;
        case 3: o.peer = v; break;
        case 4: o.event = v; break;
        case 5: o.group = v; break;
        case 6: o.bytes = v; break;
        case 7: o.memory_bytes = v; break;
        case 8: o.flops = doubles[next(std::size(doubles))]; break;
        case 9: o.coll = static_cast<sc::collective>(next(6)); break;
        case 10: o.key.type = static_cast<sc::op_type>(next(sc::op_type_count + 2)); break;
        case 11: o.reads.push_back(v); break;
        case 12: o.gemm = {size(), size(), size(), next(2) ? 1 : size()}; break;
        case 13: o.key.slot = static_cast<sc::op_type>(next(sc::op_type_count + 2)); break;
        case 14: o.key.at.layer = next(2) ? v : INT_MIN; break;
        case 15: o.key.at.split = -1 - static_cast<int>(next(3)); break;
        default: p.num_events = v; break;
      }
    }
    sc::structure_check quick(p), full(p);
    std::size_t first_disagreement = p.ops.size();  // one assertion per round: doctest's are slow in Debug
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      if (quick.accepts(i) != full.explain(i) && first_disagreement == p.ops.size()) first_disagreement = i;
    bool same = quick.problems().size() == full.problems().size();
    for (std::size_t k = 0; same && k < full.problems().size(); ++k)
      same = quick.problems()[k].text == full.problems()[k].text;
    if (first_disagreement != p.ops.size() || !same)
      FAIL_CHECK("round " << round << ": the quick test and explain disagree at op " << first_disagreement);
    rounds_with_problems += !full.problems().empty();
  }
  CHECK(rounds_with_problems > 10000);  // most rounds break something
}

TEST_CASE("a program may declare INT_MAX events: the checks, the order, simulate and verify hold none per event") {
  // num_events is a bound, not a count: a table per declared event would be 17 GB here.
  const sim::analytic_cost_model h100(sim::h100_node());
  auto step = pair_step();
  for (auto& p : step) {
    p.num_events = INT_MAX;
    p.ops.insert(p.ops.begin() + 1, {sc::op{.kind = sc::op_kind::record, .stream = 0, .event = INT_MAX - 1},
                                     sc::op{.kind = sc::op_kind::wait, .stream = 0, .event = INT_MAX - 1}});
  }
  CHECK(findings(step).empty());
  const sc::rank_order order(step[0]);
  REQUIRE(order.predecessors(2).size() == 1);
  CHECK(order.predecessors(2)[0] == 1);  // the wait follows the record of its event
  CHECK(simulate_error(step, h100).empty());
  step[1].ops[2].event = INT_MAX - 2;  // a wait for an event nothing recorded
  CHECK(findings(step).find("before any record of it") != std::string::npos);
}

TEST_CASE("simulate: ranks that disagree on a collective hang with a wait-for graph, as on NCCL") {
  const sim::analytic_cost_model h100(sim::h100_node());
  auto kind = pair_step();
  kind[1].ops[1].coll = sc::collective::all_gather;
  const sim::result k = sim::simulate(kind, h100);
  CHECK(k.deadlock);
  CHECK(k.wait_for_graph.find("its rendezvous never starts: ranks 0 and 1 disagree on collective #0 of dp: "
                              "all_reduce of 1024 bytes vs all_gather of 1024 bytes") != std::string::npos);
  auto size = pair_step();
  size[1].ops[1].bytes = 2048;
  const sim::result z = sim::simulate(size, h100);
  CHECK(z.deadlock);
  CHECK(z.wait_for_graph.find("all_reduce of 1024 bytes vs all_reduce of 2048 bytes") != std::string::npos);
  CHECK_FALSE(ov::verify::verify(size).empty());

  auto p2p = pair_step();
  p2p[0].ops[1] = sc::op{.kind = sc::op_kind::send, .stream = 0, .comm = 0, .peer = 1, .bytes = 8};
  p2p[1].ops[1] = sc::op{.kind = sc::op_kind::recv, .stream = 0, .comm = 0, .peer = 0, .bytes = 16};
  const sim::result s = sim::simulate(p2p, h100);
  CHECK(s.deadlock);
  CHECK(s.wait_for_graph.find("send of 8 bytes meets a recv of 16 bytes") != std::string::npos);
}

namespace {
/// A cost model that answers `us` for every compute op.
class fixed_cost : public sim::adjusted_cost_model {
 public:
  explicit fixed_cost(double us) : adjusted_cost_model(sim::h100_node()), us_(us) {}
  double compute_us(const sc::op&, int) const override { return us_; }

 private:
  double us_;
};
class bad_comm_cost : public sim::adjusted_cost_model {
 public:
  bad_comm_cost() : adjusted_cost_model(sim::h100_node()) {}
  double comm_us(const sc::op&, const sim::placement&) const override { return -3; }
};
}  // namespace

TEST_CASE("simulate: a cost model's NaN, infinite or negative time names the rank, the op and the value") {
  const std::string nan = simulate_error(pair_step(), fixed_cost(std::nan("")));
  CHECK(nan.starts_with("simulate: the cost model gives rank "));
  CHECK(nan.find(" op 0 (fc1_fprop) nan us") != std::string::npos);
  CHECK(nan.find("nan us; a cost must be finite and >= 0") != std::string::npos);
  CHECK(simulate_error(pair_step(), fixed_cost(std::numeric_limits<double>::infinity())).find("inf us") !=
        std::string::npos);
  CHECK(simulate_error(pair_step(), fixed_cost(-1)).find("-1.000000 us") != std::string::npos);
  CHECK(simulate_error(pair_step(), bad_comm_cost()).find("op 1 (dp_grad_reduce) -3.000000 us") != std::string::npos);
  sim::machine none = sim::h100_node();
  none.sms = 0;
  CHECK(simulate_error(pair_step(), sim::analytic_cost_model(none)).find("the machine needs sms >= 1") !=
        std::string::npos);
  sim::machine eventless = sim::h100_node();
  eventless.event_us = std::numeric_limits<double>::quiet_NaN();
  CHECK(simulate_error(pair_step(), sim::analytic_cost_model(eventless)).find("launch_us and event_us >= 0") !=
        std::string::npos);
  sim::machine clockless = sim::h100_node();
  clockless.sustained_clock_mhz = -1575;
  CHECK(simulate_error(pair_step(), sim::analytic_cost_model(clockless))
            .find("sustained_clock_mhz must be finite and >= 0") != std::string::npos);
  clockless.sustained_clock_mhz = std::nan("");
  CHECK(simulate_error(pair_step(), sim::analytic_cost_model(clockless))
            .find("sustained_clock_mhz must be finite and >= 0") != std::string::npos);
  // An interference below 0 would run kernels beside communication faster, or backwards in time.
  sim::machine eager = sim::h100_node();
  eager.compute_interference = -2;
  CHECK(simulate_error(pair_step(), sim::analytic_cost_model(eager))
            .find("compute_interference must be finite and >= 0") != std::string::npos);
  eager = sim::h100_node();
  eager.comm_interference = std::numeric_limits<double>::infinity();
  CHECK(simulate_error(pair_step(), sim::analytic_cost_model(eager)).find("(it has inf and 0.05") != std::string::npos);
}

namespace {
/// A cost model that simulates again, in the workspace of the simulation that asks it.
class reentrant_cost : public sim::adjusted_cost_model {
 public:
  explicit reentrant_cost(sim::workspace& space) : adjusted_cost_model(sim::h100_node()), space_(&space) {}
  double compute_us(const sc::op& o, int sms) const override {
    (void)sim::simulate(pair_step(), sim::analytic_cost_model(sim::h100_node()), {.reuse = space_});
    return adjusted_cost_model::compute_us(o, sms);
  }

 private:
  sim::workspace* space_;
};
}  // namespace

TEST_CASE("simulate: a workspace in use by another simulation is refused, and free again afterwards") {
  sim::workspace space;
  const reentrant_cost cost(space);
  CHECK_THROWS_WITH_AS((void)sim::simulate(pair_step(), cost, {.reuse = &space}),
                       doctest::Contains("options::reuse names a workspace another simulation is using"),
                       std::invalid_argument);
  // The refused call let go of nothing it did not hold, and the failed one let go of the workspace.
  const sim::analytic_cost_model h100(sim::h100_node());
  CHECK(sim::simulate(pair_step(), h100, {.reuse = &space}).step_time_us ==
        sim::simulate(pair_step(), h100).step_time_us);
}

TEST_CASE("measured costs: each bad entry is reported with its JSON path") {
  const sim::machine h100 = sim::h100_node();
  nlohmann::json doc;
  doc["compute_us"]["fc1_fprop"] = std::numeric_limits<double>::infinity();
  doc["compute_us"]["no_such_op"] = 1;
  doc["comm_us"]["fc2_fprop"] = 1;
  try {
    sim::measured_cost_model model(h100, doc);
    FAIL("accepted");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    CHECK(m.find("3 problems") != std::string::npos);
    CHECK(m.find("compute_us[\"fc1_fprop\"]: not finite") != std::string::npos);
    CHECK(m.find("compute_us[\"no_such_op\"]: ") != std::string::npos);
    CHECK(m.find("comm_us[\"fc2_fprop\"]: fc2_fprop is a compute op type; move the entry to compute_us") !=
          std::string::npos);
  }
  const std::string path = "bad_input_1e400.json";
  std::ofstream(path) << R"({"compute_us": {"fc1_fprop": 1e400}})";
  CHECK_THROWS_WITH_AS(sim::measured_cost_model::from_file(h100, path),
                       doctest::Contains("compute_us[\"fc1_fprop\"]: a number too large for a double"),
                       std::invalid_argument);
  std::remove(path.c_str());
}

TEST_CASE("compose_step: a workload whose matrix problems pass 2^31 a side is refused by name") {
  // The compose_step fuzzer generated a qkv weight gradient of 8 x 4,026,532,080 x 64 from a valid
  // workload, which the structure check then refused: the generator refuses it first.
  sc::workload w = small();
  w.num_attention_heads = 8;
  w.kv_channels = 1 << 28;  // a qkv width of 8 x 2^28 + 2 x 8 x 2^28
  CHECK(compose_error(dense_pp2::settings, dense_pp2::resolved, w)
            .find("matrix problems beyond 2^31 a side (gemm_shape::most): the qkv projection's width = 6442450944") !=
        std::string::npos);
  w = small();
  w.seq_length = 1 << 20;
  w.micro_batch_size = 4096;
  CHECK(compose_error(dense_pp2::settings, dense_pp2::resolved, w)
            .find("the tokens of a micro-batch (seq_length x micro_batch_size) = 4294967296") != std::string::npos);
}
