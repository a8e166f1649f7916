// The generators' programs (DP, TP, PP, EP, and TP x DP x PP composed) through the executor on
// the recording shim: the pre-flight accepts exactly-sized resources and rejects a buffer one
// element short, and run() issues exactly the calls an independent reading of each program
// predicts. A composed MoE step (tp2 pp2 vpp2 dp2 ep2) runs with its kernels bound by op type
// through `kernels_for<Cfg::schedule>`, 14 callables for every compute type, and one buffer
// provider.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <overlap/cuda/bind.hpp>
#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>

#include "generated_fixture.hpp"
#include "shim_fixture.hpp"

using namespace shim;
namespace ov = overlap;

namespace {

/// What the recording shim should log for `p` (streams created as 100.., events as 200..,
/// send buffers at offset 0 and receive buffers at 4096, bf16).
std::vector<std::string> expected_log(const sc::program& p) {
  std::vector<std::string> log;
  const auto st = [](int stream) { return " s" + std::to_string(100 + stream); };
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const sc::op& o = p.ops[i];
    if (o.group >= 0 && (i == 0 || p.ops[i - 1].group != o.group)) log.push_back("group_start");
    const std::string comm = o.comm >= 0 ? p.comms[static_cast<std::size_t>(o.comm)].name : "";
    const std::int64_t n =
        o.comm >= 0 ? static_cast<std::int64_t>(p.comms[static_cast<std::size_t>(o.comm)].ranks.size()) : 1;
    const auto count = [](std::int64_t bytes) { return " count " + std::to_string(bytes / 2); };
    switch (o.kind) {
      case sc::op_kind::compute: log.push_back("kernel " + sc::display_name(o.key) + st(o.stream)); break;
      case sc::op_kind::record: log.push_back("record e" + std::to_string(200 + o.event) + st(o.stream)); break;
      case sc::op_kind::wait: log.push_back("wait" + st(o.stream) + " e" + std::to_string(200 + o.event)); break;
      case sc::op_kind::host_sync:
        if (o.event >= 0) log.push_back("host_wait e" + std::to_string(200 + o.event));
        break;
      case sc::op_kind::send:
        log.push_back("send " + comm + st(o.stream) + " @0" + count(o.bytes) + " to " + std::to_string(o.peer));
        break;
      case sc::op_kind::recv:
        log.push_back("recv " + comm + st(o.stream) + " @4096" + count(o.bytes) + " from " + std::to_string(o.peer));
        break;
      case sc::op_kind::collective:
        if (o.coll == sc::collective::all_to_all) {
          if (o.group < 0) log.push_back("group_start");
          const std::int64_t part = o.bytes / n;
          for (std::int64_t q = 0; q < n; ++q) {
            log.push_back("send " + comm + st(o.stream) + " @" + std::to_string(q * part) + count(part) + " to " +
                          std::to_string(q));
            log.push_back("recv " + comm + st(o.stream) + " @" + std::to_string(4096 + q * part) + count(part) +
                          " from " + std::to_string(q));
          }
          if (o.group < 0) log.push_back("group_end");
        } else {
          log.push_back(std::string(sc::to_string(o.coll)) + " " + comm + st(o.stream) + " @0 -> @4096" +
                        count(o.coll == sc::collective::all_reduce ? o.bytes : o.bytes / n));
        }
        break;
    }
    if (o.group >= 0 && (i + 1 == p.ops.size() || p.ops[i + 1].group != o.group)) log.push_back("group_end");
  }
  return log;
}

/// Runs every program of `step` through the executor and compares with `expected_log`.
void check_step(const std::vector<sc::program>& step) {
  REQUIRE_FALSE(step.empty());
  for (const sc::program& p : step) {
    const std::unique_ptr<char[]> memory = reset_with_memory_for(p);
    const auto comms = comms_for(p);
    executor exec(p, supply(p, comms, memory.get()));
    s().log.clear();
    exec.run();
    CAPTURE(p.rank);
    const auto expected = expected_log(p);
    REQUIRE(s().log.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CAPTURE(i);
      REQUIRE(s().log[i] == expected[i]);
    }
  }
}

/// The first communication op of rank 0 with its receive side one element short is rejected.
void check_short_buffer_rejected(const sc::program& p) {
  const auto first = std::find_if(p.ops.begin(), p.ops.end(), [](const sc::op& o) {
    return sc::is_communication(o.kind) && o.kind != sc::op_kind::send;
  });
  REQUIRE(first != p.ops.end());
  const auto comms = comms_for(p);
  const auto r = edit_buffers(supply(p, comms), [&](const sc::op& o, buffer& b) {
    if (o.key == first->key && o.kind == first->kind) b.recv_bytes -= 2;
  });
  reset();
  const std::string index = std::to_string(first - p.ops.begin());
  const std::string needle = "op " + index + " '" + sc::display_name(*first) + "'";
  std::string message;
  try {
    executor exec(p, r);
  } catch (const overlap::cuda::preflight_error& e) {
    message = e.what();
  }
  CHECK(message.find(needle) != std::string::npos);
  CHECK(message.find("[EXEC-BUFFER]") != std::string::npos);
}
}  // namespace

TEST_CASE("generated DP programs (bucketed reduce-scatter, prefetched all-gathers) run as the program says") {
  const sc::workload w = small_workload(4, 2);
  using cfg = ov::config<ov::dp<4>, ov::overlap_grad_reduce<>, ov::overlap_param_gather<>, ov::distributed_optimizer<>>;
  const auto step = sc::data_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[1]);
}

TEST_CASE("generated TP programs (ring exchange groups, split reduce-scatters) run as the program says") {
  const sc::workload w = small_workload(2, 1);
  using cfg = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>>;
  const auto step = sc::tensor_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[2]);
}

TEST_CASE("generated PP programs (batched p2p groups) run as the program says") {
  const sc::workload w = small_workload(8, 4);
  using cfg = ov::config<ov::pp<4>>;
  const auto step = sc::pipeline_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[3]);
}

TEST_CASE("generated EP programs (all-to-all dispatch and combine) run as the program says") {
  sc::workload w = small_workload(2, 2);
  w.moe_router_topk = 8;
  w.moe_ffn_hidden_size = 768;
  using cfg =
      ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                 ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>>;
  const auto step = sc::expert_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[0]);
}

TEST_CASE("composed TP x DP x PP programs run as the program says") {
  const sc::workload w = small_workload(4, 4);
  using cfg = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::pp<2>, ov::dp<2>,
                         ov::overlap_grad_reduce<>, ov::overlap_param_gather<>, ov::distributed_optimizer<>>;
  const auto step = sc::compose_step(cfg::settings, cfg::resolved, w, sc::family_set{});
  REQUIRE(step.size() == 8);
  check_step(step);
  check_short_buffer_rejected(step[5]);
}

namespace {
/// A kernel that logs "kernel <its callable's name> <display name> s<stream>".
auto tagged(std::string callable) {
  return [callable](const sc::op_key& key, int stream) {
    s().log.push_back("kernel " + callable + " " + sc::display_name(key) + " s" + std::to_string(stream));
  };
}
}  // namespace

TEST_CASE("a composed tp2 pp2 vpp2 dp2 ep2 MoE program binds every kind with 14 callables and one buffer provider") {
  using cfg = composed_moe;
  const auto step = cfg::schedule::generate(composed_moe_workload());
  REQUIRE(step.size() == 8);

  // Which callable each compute type should reach; written out here, apart from the bindings.
  const std::map<op_type, std::string> callable_of{
      {op_type::embedding_fprop, "embedding"},   {op_type::embedding_bprop, "embedding"},
      {op_type::layernorm_fprop, "norm"},        {op_type::layernorm_bprop, "norm"},
      {op_type::qkv_fprop, "gemm_fprop"},        {op_type::proj_fprop, "gemm_fprop"},
      {op_type::qkv_dgrad, "gemm_dgrad"},        {op_type::proj_dgrad, "gemm_dgrad"},
      {op_type::qkv_wgrad, "gemm_wgrad"},        {op_type::proj_wgrad, "gemm_wgrad"},
      {op_type::attn_core_fprop, "attn_fprop"},  {op_type::attn_core_bprop, "attn_bprop"},
      {op_type::router_fprop, "router"},         {op_type::router_bprop, "router"},
      {op_type::permute_fprop, "permute"},       {op_type::permute_bprop, "permute"},
      {op_type::unpermute_fprop, "permute"},     {op_type::unpermute_bprop, "permute"},
      {op_type::experts_fprop, "experts_fprop"}, {op_type::experts_dgrad, "experts_bprop"},
      {op_type::experts_wgrad, "experts_bprop"}, {op_type::lm_head_fprop, "lm_head"},
      {op_type::lm_head_bprop, "lm_head"},       {op_type::optimizer_step, "optimizer"},
      {op_type::tp_ring_reduce, "ring_reduce"}};

  namespace cu = overlap::cuda;
  // 14 callables; kernels_for fails to compile if a compute type of cfg::schedule has none.
  const resources::kernel_table kernels = cu::kernels_for<cfg::schedule>(
      cu::on<op_type::embedding_fprop, op_type::embedding_bprop>(tagged("embedding")),
      cu::on<op_type::layernorm_fprop, op_type::layernorm_bprop>(tagged("norm")),
      cu::on<op_type::qkv_fprop, op_type::proj_fprop>(tagged("gemm_fprop")),
      cu::on<op_type::qkv_dgrad, op_type::proj_dgrad>(tagged("gemm_dgrad")),
      cu::on<op_type::qkv_wgrad, op_type::proj_wgrad>(tagged("gemm_wgrad")),
      cu::on<op_type::attn_core_fprop>(tagged("attn_fprop")), cu::on<op_type::attn_core_bprop>(tagged("attn_bprop")),
      cu::on<op_type::router_fprop, op_type::router_bprop>(tagged("router")),
      cu::on<op_type::permute_fprop, op_type::permute_bprop, op_type::unpermute_fprop, op_type::unpermute_bprop>(
          tagged("permute")),
      cu::on<op_type::experts_fprop>(tagged("experts_fprop")),
      cu::on<op_type::experts_dgrad, op_type::experts_wgrad>(tagged("experts_bprop")),
      cu::on<op_type::lm_head_fprop, op_type::lm_head_bprop>(tagged("lm_head")),
      cu::on<op_type::optimizer_step>(tagged("optimizer")), cu::on<op_type::tp_ring_reduce>(tagged("ring_reduce")));

  std::map<sc::op_kind, int> kinds;
  std::map<sc::family, int> families;
  for (const sc::program& p : step) {
    CAPTURE(p.rank);
    const std::unique_ptr<char[]> memory = reset_with_memory_for(p);
    const auto comms = comms_for(p);
    resources r;
    for (const auto& [name, state] : comms) r.comms[name] = state.get();
    r.kernels = kernels;
    r.buffers = exact_buffers(p, memory.get());  // the one provider, for every communication op
    executor exec(p, r);
    s().log.clear();
    exec.run();

    std::vector<std::string> expected;
    for (const sc::op& o : p.ops) {
      ++kinds[o.kind];
      ++families[o.family()];
      CHECK(cfg::schedule::op_types.contains(o.key.type));
      if (o.kind != sc::op_kind::compute) continue;
      const auto it = callable_of.find(o.key.type);
      REQUIRE_MESSAGE(it != callable_of.end(), sc::display_name(o));
      expected.push_back("kernel " + it->second + " " + sc::display_name(o.key) + " s" +
                         std::to_string(100 + o.stream));
    }
    const auto called = lines_starting("kernel ");
    REQUIRE(called.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CAPTURE(i);
      CHECK(called[i] == expected[i]);
    }
    // The rest of the log is what the program says, as for the other generated programs.
    std::vector<std::string> rest;
    for (const std::string& line : expected_log(p))
      if (line.rfind("kernel ", 0) != 0) rest.push_back(line);
    std::vector<std::string> logged;
    for (const std::string& line : s().log)
      if (line.rfind("kernel ", 0) != 0) logged.push_back(line);
    CHECK(logged == rest);
  }
  // Every op kind and every family is in the step.
  for (const sc::op_kind k : {sc::op_kind::compute, sc::op_kind::collective, sc::op_kind::send, sc::op_kind::recv,
                              sc::op_kind::record, sc::op_kind::wait})
    CHECK_MESSAGE(kinds[k] > 0, sc::to_string(k));
  for (const sc::family f : sc::families) CHECK_MESSAGE(families[f] > 0, sc::to_string(f));
}
