// Faults injected into generated programs are caught with rank, op and reason.
#include <doctest/doctest.h>

#include <string>

#include <overlap/overlap.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

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
