// Faults injected into generated programs are caught with rank, op and reason; among them the
// ring-exchange race the TP generator once emitted.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
std::vector<sc::program> dp_step() {
  using cfg = ov::config<ov::dp<4>, ov::distributed_optimizer<>, ov::num_buckets<4>>;
  sc::workload w{.num_layers = 4, .micro_batches = 2, .seq_length = 1024, .hidden_size = 1024, .ffn_hidden_size = 3584};
  return sc::data_parallel_step(cfg::settings, cfg::resolved, w);
}

std::size_t index_of(const sc::program& p, const sc::op_key& key) {
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].key == key) return i;
  FAIL("no op " << sc::display_name(key));
  return 0;
}

bool reports(const std::vector<ov::verify::finding>& found, int rank, const std::string& text) {
  for (const auto& f : found)
    if (f.rank == rank && f.op >= 0 && f.reason.find(text) != std::string::npos) return true;
  return false;
}

const sc::op_key bucket0{.type = sc::op_type::dp_grad_reduce, .at = {.chunk = 0, .bucket = 0}};
const sc::op_key bucket1{.type = sc::op_type::dp_grad_reduce, .at = {.chunk = 0, .bucket = 1}};
}  // namespace

TEST_CASE("faults injected into a generated DP step are caught with rank, op and reason") {
  REQUIRE(ov::verify::verify(dp_step()).empty());

  auto swapped = dp_step();  // rank 2 issues two bucket reductions in the other order
  std::swap(swapped[2].ops[index_of(swapped[2], bucket0)], swapped[2].ops[index_of(swapped[2], bucket1)]);
  CHECK(reports(ov::verify::verify(swapped), 2, "where the issue order gives"));

  auto unordered = dp_step();  // the optimizer no longer waits for the dp stream
  auto& ops = unordered[1].ops;
  const std::size_t optimizer = index_of(unordered[1], {.type = sc::op_type::optimizer_step});
  REQUIRE(ops[optimizer - 1].kind == sc::op_kind::wait);
  ops.erase(ops.begin() + static_cast<long>(optimizer) - 1);
  CHECK(reports(ov::verify::verify(unordered), 1, "without depending on op"));

  auto early_wait = dp_step();  // a wait moved before the record it waits for
  auto& p0 = early_wait[0].ops;
  for (std::size_t i = 1; i < p0.size(); ++i)
    if (p0[i].kind == sc::op_kind::wait && p0[i - 1].kind == sc::op_kind::record && p0[i].event == p0[i - 1].event) {
      std::swap(p0[i], p0[i - 1]);
      break;
    }
  CHECK(reports(ov::verify::verify(early_wait), 0, "before any record"));

  auto reused = dp_step();  // the last backward writes the buffer bucket 0's reduction writes
  auto& r3 = reused[3];
  const auto& reduce = r3.ops[index_of(r3, bucket0)];
  REQUIRE(reduce.writes.size() == 1);
  const int reduced = reduce.writes[0];
  r3.ops[index_of(r3, {.type = sc::op_type::embedding_bprop, .at = {.micro_batch = 1}})].writes.push_back(reduced);
  CHECK(reports(ov::verify::verify(reused), 3, "reduced_gradients c0 b0"));
}

TEST_CASE("a ring exchange without its NCCL group hangs, and the verifier shows the cycle") {
  using cfg = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>>;
  sc::workload w{.num_layers = 1, .micro_batches = 1, .seq_length = 1024, .hidden_size = 1024, .ffn_hidden_size = 3584};
  auto step = sc::tensor_parallel_step(cfg::settings, cfg::resolved, w);
  REQUIRE(ov::verify::verify(step).empty());
  for (auto& p : step)
    for (auto& o : p.ops) o.group = -1;
  const auto found = ov::verify::verify(step);
  REQUIRE(found.size() == 1);
  CHECK(found[0].reason.find("dependency cycle") != std::string::npos);
  CHECK(found[0].reason.find("tp_ring_send") != std::string::npos);
  CHECK(ov::sim::simulate(step, ov::sim::analytic_cost_model(ov::sim::h100_node())).deadlock);
}

TEST_CASE("the old ring-exchange all-gather, whose first send did not wait for its input, is a race") {
  // The generator once issued a layer's first ring send with no wait for the compute stream, so it
  // could send the layer input before the op writing it had run. Rebuild that shape: drop the wait
  // on the ring stream right before the first layer's first send. (A later layer's input comes
  // from the previous layer's reduce-scatter on the same communicator, which communicator order
  // covers; the first layer's comes from the embedding on the compute stream.)
  using ring = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
                          ov::tp_comm_overlap_cfg<ov::ub::userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192>>;
  static_assert(ring::resolved.tp_comm_overlap_cfg.qkv_fprop.method == ov::ub::method::ring_exchange);
  sc::workload w{.num_layers = 2, .micro_batches = 1, .seq_length = 1024, .hidden_size = 1024, .ffn_hidden_size = 3584};
  auto step = sc::tensor_parallel_step(ring::settings, ring::resolved, w);
  INFO(ov::verify::verify_report(step));
  REQUIRE(ov::verify::verify(step).empty());
  int dropped = 0;
  for (auto& p : step)
    for (std::size_t i = 1; i < p.ops.size(); ++i) {
      const sc::op& o = p.ops[i];
      const bool first_send = o.key.type == sc::op_type::tp_ring_send && o.key.at.split == 0 &&
                              o.key.slot == sc::op_type::qkv_fprop && o.key.at.layer == 0;
      if (!first_send) continue;
      std::size_t j = i;
      while (j-- > 0 && !(p.ops[j].kind == sc::op_kind::wait && p.ops[j].stream == o.stream)) {}
      REQUIRE(p.ops[j].kind == sc::op_kind::wait);
      p.ops.erase(p.ops.begin() + static_cast<long>(j));
      ++dropped;
      break;
    }
  REQUIRE(dropped == 4);
  const auto found = ov::verify::verify(step);
  INFO(ov::verify::verify_report(step));
  for (int rank = 0; rank < 4; ++rank) CHECK(reports(found, rank, "(activation l0 mb0) without depending on op 0"));
}
