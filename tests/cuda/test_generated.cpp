// The generators' programs (DP, TP, PP, EP, and TP x DP x PP composed) through the executor on
// the recording shim: the pre-flight accepts exactly-sized resources and rejects a buffer one
// element short, and run() issues exactly the calls an independent reading of each program
// predicts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>

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
    const std::int64_t n = o.comm >= 0 ? static_cast<std::int64_t>(p.comms[static_cast<std::size_t>(o.comm)].ranks.size()) : 1;
    const auto count = [](std::int64_t bytes) { return " count " + std::to_string(bytes / 2); };
    switch (o.kind) {
      case sc::op_kind::compute: log.push_back("kernel " + sc::display_name(o.key) + st(o.stream)); break;
      case sc::op_kind::record: log.push_back("record e" + std::to_string(200 + o.event) + st(o.stream)); break;
      case sc::op_kind::wait: log.push_back("wait" + st(o.stream) + " e" + std::to_string(200 + o.event)); break;
      case sc::op_kind::host_sync: break;
      case sc::op_kind::send: log.push_back("send " + comm + st(o.stream) + " @0" + count(o.bytes) + " to " + std::to_string(o.peer)); break;
      case sc::op_kind::recv: log.push_back("recv " + comm + st(o.stream) + " @4096" + count(o.bytes) + " from " + std::to_string(o.peer)); break;
      case sc::op_kind::collective:
        if (o.coll == sc::collective::all_to_all) {
          if (o.group < 0) log.push_back("group_start");
          const std::int64_t part = o.bytes / n;
          for (std::int64_t q = 0; q < n; ++q) {
            log.push_back("send " + comm + st(o.stream) + " @" + std::to_string(q * part) + count(part) + " to " + std::to_string(q));
            log.push_back("recv " + comm + st(o.stream) + " @" + std::to_string(4096 + q * part) + count(part) + " from " + std::to_string(q));
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
    std::int64_t largest = 0;
    for (const sc::op& o : p.ops) largest = std::max(largest, o.bytes);
    // Address space only: the shim never touches the memory.
    const std::unique_ptr<char[]> memory(new char[static_cast<std::size_t>(largest) + 8192]);
    reset();
    s().base = memory.get();
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
  sc::workload w;
  w.layers = 4;
  w.micro_batches = 2;
  using cfg = ov::config<ov::dp<4>, ov::overlap_grad_reduce<>, ov::overlap_param_gather<>, ov::distributed_optimizer<>>;
  const auto step = sc::data_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[1]);
}

TEST_CASE("generated TP programs (ring exchange groups, split reduce-scatters) run as the program says") {
  sc::workload w;
  w.layers = 2;
  w.micro_batches = 1;
  using cfg = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>>;
  const auto step = sc::tensor_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[2]);
}

TEST_CASE("generated PP programs (batched p2p groups) run as the program says") {
  sc::workload w;
  w.layers = 8;
  w.micro_batches = 4;
  using cfg = ov::config<ov::pp<4>>;
  const auto step = sc::pipeline_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[3]);
}

TEST_CASE("generated EP programs (all-to-all dispatch and combine) run as the program says") {
  sc::workload w;
  w.layers = 2;
  w.micro_batches = 2;
  w.experts = 64;
  w.top_k = 8;
  w.moe_ffn_hidden = 768;
  using cfg = ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                         ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>>;
  const auto step = sc::expert_parallel_step(cfg::settings, cfg::resolved, w);
  check_step(step);
  check_short_buffer_rejected(step[0]);
}

TEST_CASE("composed TP x DP x PP programs run as the program says") {
  sc::workload w;
  w.layers = 4;
  w.micro_batches = 4;
  using cfg = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::pp<2>, ov::dp<2>,
                         ov::overlap_grad_reduce<>, ov::overlap_param_gather<>, ov::distributed_optimizer<>>;
  const auto step = sc::compose_step(cfg::settings, cfg::resolved, w);
  REQUIRE(step.size() == 8);
  check_step(step);
  check_short_buffer_rejected(step[5]);
}
