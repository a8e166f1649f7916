// The simulator on small steps whose timing can be worked out by hand, on a toy machine:
// 100 SMs at 1e6 flop/us each, 10 SMs per communication kernel, 1000 bytes/us links, no latency
// and no launch cost unless a test sets them.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <overlap/sim/analysis/bound.hpp>
#include <overlap/sim/engine/large_array.hpp>
#include <overlap/sim/simulate.hpp>

namespace sc = overlap::schedule;
namespace sim = overlap::sim;

namespace {

sim::machine toy() {
  return sim::machine{.name = "toy",
                      .sms = 100,
                      .peak_flops_per_us = 100e6,
                      .memory_bytes_per_us = 1e9,
                      .gpus_per_node = 8,
                      .nvlink_bytes_per_us = 1000,
                      .nvlink_latency_us = 0,
                      .network_bytes_per_us = 100,
                      .network_latency_us = 0,
                      .launch_us = 0,
                      .comm_sms = 10};
}

sc::op gemm(int stream, int layer, double flops = 1e9) {  // 10 us on the whole GPU
  return sc::op{.kind = sc::op_kind::compute,
                .stream = stream,
                .key = {.type = sc::op_type::fc1_fprop, .at = {.layer = layer}},
                .flops = flops};
}
sc::op all_reduce(int stream, int comm, std::int64_t seq, int bucket,
                  std::int64_t bytes = 10'000) {  // 10 us between two ranks
  return sc::op{.kind = sc::op_kind::collective,
                .stream = stream,
                .key = {.type = sc::op_type::dp_grad_reduce, .at = {.bucket = bucket}},
                .coll = sc::collective::all_reduce,
                .comm = comm,
                .seq = seq,
                .bytes = bytes};
}

sc::program two_rank_program(int rank, int streams, std::vector<sc::op> ops) {
  sc::program p;
  p.rank = rank;
  for (int s = 0; s < streams; ++s)
    p.streams.push_back({s == 0 ? sc::stream_role::compute : sc::stream_role::dp_comm, 0});
  p.comms = {{"dp", {0, 1}}, {"dp2", {0, 1}}};
  p.num_events = 2;
  p.ops = std::move(ops);
  return p;
}

const sim::interval& interval_of(const sim::result& r, int rank, int op) {
  for (const auto& i : r.intervals)
    if (i.rank == rank && i.op == op) return i;
  FAIL("no interval for rank " << rank << " op " << op);
  return r.intervals.front();
}

}  // namespace

TEST_CASE("a collective on its own stream overlaps compute, on the compute stream it does not") {
  const sim::analytic_cost_model cost(toy());
  std::vector<sc::program> overlapped, serial;
  for (int rank = 0; rank < 2; ++rank) {
    overlapped.push_back(two_rank_program(rank, 2, {gemm(0, 0), all_reduce(1, 0, 0, 0)}));
    serial.push_back(two_rank_program(rank, 1, {gemm(0, 0), all_reduce(0, 0, 0, 0)}));
  }
  const sim::result o = sim::simulate(overlapped, cost);
  const sim::result s = sim::simulate(serial, cost);
  REQUIRE_FALSE(o.deadlock);
  REQUIRE_FALSE(s.deadlock);
  // Overlapped: the all-reduce takes 10 of the GEMM's 100 SMs for its 10 us, so the GEMM does 9 us
  // of its work by then and the last 1 us on all SMs again.
  CHECK(o.step_time_us == doctest::Approx(11.0));
  CHECK(interval_of(o, 0, 1).end_us == doctest::Approx(10.0));
  CHECK(o.exposed_comm_us[static_cast<int>(sc::family::dp)] == doctest::Approx(0.0));
  CHECK(s.step_time_us == doctest::Approx(20.0));
  CHECK(s.exposed_comm_us[static_cast<int>(sc::family::dp)] == doctest::Approx(10.0));
  CHECK(s.compute_us == doctest::Approx(10.0));
}

TEST_CASE("compute beside communication runs slower by the traffic the transfers bring its GPU") {
  // compute_interference 0.2: a kernel runs 20 % slower beside transfers moving the NVLink rate in
  // and out of its GPU. The GEMM of 10 us runs on the 90 SMs the all-reduce leaves (11.1 us
  // alone there, 13.3 beside it): by the all-reduce's end at 10 us it has done 3/4 of its work, and
  // the last 2.5 us run on all SMs at full speed.
  sim::machine m = toy();
  m.compute_interference = 0.2;
  const auto gemm_end = [](const sim::machine& machine, std::vector<sc::program> step) {
    const sim::result r = sim::simulate(step, sim::analytic_cost_model(machine));
    REQUIRE_FALSE(r.deadlock);
    return interval_of(r, 0, 0).end_us;
  };
  std::vector<sc::program> pair;
  for (int rank = 0; rank < 2; ++rank) pair.push_back(two_rank_program(rank, 2, {gemm(0, 0), all_reduce(1, 0, 0, 0)}));
  CHECK(gemm_end(m, pair) == doctest::Approx(12.5));
  CHECK(gemm_end(toy(), pair) == doctest::Approx(11.0));
  // Two all-reduces on one link move what one moves: each at half the rate for twice as long. The
  // GEMM runs on 80 SMs (12.5 us alone, 15 beside them) for 20 us: 4/3 of its work, so it ends
  // beside them, at 15 us.
  std::vector<sc::program> shared;
  for (int rank = 0; rank < 2; ++rank)
    shared.push_back(two_rank_program(rank, 3, {gemm(0, 0), all_reduce(1, 0, 0, 0), all_reduce(2, 1, 0, 1)}));
  CHECK(gemm_end(m, shared) == doctest::Approx(15.0));
  // Across nodes the transfer moves the network's rate, a tenth of NVLink's on this machine: the
  // GEMM runs 2 % slower on its 90 SMs for its whole life (the all-reduce takes 100 us).
  std::vector<sc::program> far;
  for (const int rank : {0, 8}) {
    sc::program p = two_rank_program(rank, 2, {gemm(0, 0), all_reduce(1, 0, 0, 0)});
    p.comms = {{"dp", {0, 8}}};
    far.push_back(p);
  }
  CHECK(gemm_end(m, far) == doctest::Approx(100.0 / 9 * 1.02));
  // Once the transfer ends the GEMM runs at full speed again, and without one it never slows: a
  // GEMM issued after the all-reduce's end takes its 10 us.
  std::vector<sc::program> after;
  for (int rank = 0; rank < 2; ++rank) after.push_back(two_rank_program(rank, 1, {all_reduce(0, 0, 0, 0), gemm(0, 0)}));
  const sim::result r = sim::simulate(after, sim::analytic_cost_model(m));
  CHECK(interval_of(r, 0, 1).end_us - interval_of(r, 0, 1).start_us == doctest::Approx(10.0));
}

TEST_CASE("one hardware queue blocks an independent collective behind an event wait") {
  // stream 0: gemm, record e0; stream 1: wait e0, all-reduce; stream 2: an independent all-reduce
  // issued last. With 8 queues it runs at once; with 1 it waits behind the blocked wait.
  const sim::analytic_cost_model cost(toy());
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank)
    step.push_back(two_rank_program(
        rank, 3,
        {gemm(0, 0), sc::op{.kind = sc::op_kind::record, .stream = 0, .event = 0},
         sc::op{.kind = sc::op_kind::wait, .stream = 1, .event = 0}, all_reduce(1, 0, 0, 0), all_reduce(2, 1, 0, 1)}));
  const sim::result many = sim::simulate(step, cost, {.cuda_device_max_connections = 8});
  const sim::result one = sim::simulate(step, cost, {.cuda_device_max_connections = 1});
  CHECK(interval_of(many, 0, 4).start_us == doctest::Approx(0.0));
  CHECK(interval_of(one, 0, 4).start_us >= interval_of(one, 0, 0).end_us);
  CHECK(interval_of(one, 0, 4).end_us > interval_of(many, 0, 4).end_us);
}

TEST_CASE("a collective transfers only when every member has launched it") {
  const sim::analytic_cost_model cost(toy());
  std::vector<sc::program> step{two_rank_program(0, 2, {all_reduce(1, 0, 0, 0)}),
                                two_rank_program(1, 2, {gemm(1, 1, 3e9), all_reduce(1, 0, 0, 0)})};
  const sim::result r = sim::simulate(step, cost);
  REQUIRE_FALSE(r.deadlock);
  CHECK(interval_of(r, 0, 0).start_us == doctest::Approx(30.0));  // rank 1's GEMM: 30 us
  CHECK(interval_of(r, 0, 0).end_us == doctest::Approx(40.0));
  CHECK(interval_of(r, 1, 1).start_us == doctest::Approx(30.0));
}

TEST_CASE("the host pays the launch cost per op and stops at a host sync") {
  sim::machine m = toy();
  m.launch_us = 2;
  const sim::analytic_cost_model cost(m);
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank)
    step.push_back(two_rank_program(rank, 1, {gemm(0, 0), sc::op{.kind = sc::op_kind::host_sync}, gemm(0, 1)}));
  const sim::result r = sim::simulate(step, cost);
  CHECK(interval_of(r, 0, 0).start_us == doctest::Approx(2.0));   // issued after one launch
  CHECK(interval_of(r, 0, 2).start_us == doctest::Approx(14.0));  // sync at 12, then one launch
  CHECK(r.step_time_us == doctest::Approx(24.0));
}

TEST_CASE("collectives issued in opposite orders hang, and the wait-for graph says where") {
  const sim::analytic_cost_model cost(toy());
  std::vector<sc::program> step{two_rank_program(0, 1, {all_reduce(0, 0, 0, 0), all_reduce(0, 1, 0, 1)}),
                                two_rank_program(1, 1, {all_reduce(0, 1, 0, 1), all_reduce(0, 0, 0, 0)})};
  const sim::result r = sim::simulate(step, cost);
  CHECK(r.deadlock);
  CHECK(r.wait_for_graph.find("rank 0 op 0 (dp_grad_reduce b0): launched; waits for the other members") !=
        std::string::npos);
  CHECK(r.wait_for_graph.find("rank 1 op 1 (dp_grad_reduce b0): waits for op 0 (dp_grad_reduce b1)") !=
        std::string::npos);
}

TEST_CASE("links: across nodes the network's bandwidth applies") {
  const sim::analytic_cost_model cost(toy());
  std::vector<sc::program> step;
  for (const int rank : {0, 8}) {
    sc::program p = two_rank_program(rank, 1, {all_reduce(0, 0, 0, 0)});
    p.comms = {{"dp", {0, 8}}};
    step.push_back(p);
  }
  const sim::result r = sim::simulate(step, cost);
  CHECK(r.step_time_us == doctest::Approx(100.0));  // 10,000 bytes at 100 bytes/us
}

TEST_CASE("links: concurrent transfers on one link share its bandwidth") {
  const sim::analytic_cost_model cost(toy());
  // Two 10 us all-reduces between the same two ranks on two streams and communicators: together
  // they load each rank's NVLink twice, so both take 20 us. Staggered: the second starts after a
  // GEMM of 5 us on the 90 SMs the first leaves (t2 = 50/9 us); the first has t2 of its work done
  // and ends after 2 (10 - t2) more at half speed, at 20 - t2; the second then has the rest alone.
  for (const bool staggered : {false, true}) {
    std::vector<sc::program> step;
    for (const int rank : {0, 1}) {
      std::vector<sc::op> ops{all_reduce(0, 0, 0, 0)};
      if (staggered) ops.push_back(gemm(1, 0, 0.5e9));  // 5 us on stream 1 first
      ops.push_back(all_reduce(1, 1, 0, 1));
      step.push_back(two_rank_program(rank, 2, ops));
    }
    const sim::result r = sim::simulate(step, cost);
    REQUIRE_FALSE(r.deadlock);
    CHECK(interval_of(r, 0, 0).end_us == doctest::Approx(staggered ? 20.0 - 50.0 / 9 : 20.0));
    CHECK(r.step_time_us == doctest::Approx(20.0));
    const sim::step_bound b = sim::lower_bound(step, cost);
    CHECK(b.nvlink_us == doctest::Approx(20.0));
    CHECK(b.value() <= r.step_time_us + 1e-9);
  }
}

TEST_CASE("links: a rank that computes alone launches at its own time, in the others' order") {
  const sim::analytic_cost_model cost(toy());
  // Rank 2 computes five 1 us GEMMs with no communication in flight (it runs ahead of the others
  // in the event loop), then an all-reduce B with rank 1 (10 us alone), then a last GEMM. Ranks 0
  // and 1 run all-reduce A (8 us alone) from 0, and after a 2 us GEMM (on the SMs the comm
  // kernels leave: 90 on rank 0, 80 on rank 1, which launched B at 0) all-reduce C (4 us alone),
  // which starts at 2.5. Shares: A alone till 2.5 (2.5 done); A and C at 1/2 till 5 (A 3.75, C
  // 1.25); A, B and C at 1/3 on rank 1's NVLink till C ends at 5 + 3 x 2.75 = 13.25 (A 1.5 and B
  // 7.25 left); A and B at 1/2 till A ends at 16.25; B alone till 22; the last GEMM 22 .. 23.
  const auto rank_program = [](int rank, std::vector<sc::op> ops, int streams) {
    sc::program p;
    p.rank = rank;
    for (int s = 0; s < streams; ++s)
      p.streams.push_back({s == 0 ? sc::stream_role::compute : sc::stream_role::dp_comm, 0});
    p.comms = {{"a", {0, 1}}, {"b", {1, 2}}, {"c", {0, 1}}};
    p.ops = std::move(ops);
    return p;
  };
  const auto pair_ops = [](bool with_b) {
    std::vector<sc::op> ops{all_reduce(0, 0, 0, 0, 8'000), gemm(1, 0, 2e8), all_reduce(1, 2, 0, 2, 4'000)};
    if (with_b) ops.push_back(all_reduce(2, 1, 0, 1));
    return ops;
  };
  std::vector<sc::op> alone;
  for (int layer = 0; layer < 5; ++layer) alone.push_back(gemm(0, layer, 1e8));
  alone.push_back(all_reduce(0, 1, 0, 1));
  alone.push_back(gemm(0, 5, 1e8));
  std::vector<sc::program> step{rank_program(0, pair_ops(false), 2), rank_program(1, pair_ops(true), 3),
                                rank_program(2, alone, 1)};
  // Rank 1 issues B before its GEMM, so that B's kernel holds its SMs from 0.
  std::swap(step[1].ops[1], step[1].ops[3]);
  std::swap(step[1].ops[2], step[1].ops[3]);
  const sim::result r = sim::simulate(step, cost);
  REQUIRE_FALSE(r.deadlock);
  CHECK(interval_of(r, 1, 2).end_us == doctest::Approx(2.5));    // rank 1's GEMM on 80 SMs
  CHECK(interval_of(r, 2, 5).start_us == doctest::Approx(5.0));  // B
  CHECK(interval_of(r, 0, 2).end_us == doctest::Approx(13.25));  // C
  CHECK(interval_of(r, 0, 0).end_us == doctest::Approx(16.25));  // A
  CHECK(interval_of(r, 2, 5).end_us == doctest::Approx(22.0));   // B
  CHECK(interval_of(r, 2, 6).end_us == doctest::Approx(23.0));
  CHECK(r.step_time_us == doctest::Approx(23.0));
}

TEST_CASE("a compute chain starts each op when the one before ends, its issue, or the SMs allow") {
  // A rank with no communication runs ahead, and there a compute op hands over to the next one
  // of its queue without a dispatch pass when nothing else can happen: each case here is one the
  // hand-over must leave to the dispatch, or one it takes, with its times worked out by hand.
  const auto run = [](double launch_us, int connections, std::vector<sc::op> ops, int stream_1_priority = 0) {
    sim::machine m = toy();
    m.launch_us = launch_us;
    std::vector<sc::program> step;
    for (int rank = 0; rank < 2; ++rank) {
      step.push_back(two_rank_program(rank, 2, ops));
      step.back().streams[1].priority = stream_1_priority;
    }
    return sim::simulate(step, sim::analytic_cost_model(m), {.cuda_device_max_connections = connections});
  };
  const auto short_gemm = [](int stream, int layer) { return gemm(stream, layer, 1e8); };  // 1 us
  // Issue-bound: GEMMs of 1 us issued every 4 us each start at their issue.
  const sim::result issued = run(4, 8, {short_gemm(0, 0), short_gemm(0, 1), short_gemm(0, 2)});
  for (int op = 0; op < 3; ++op) CHECK(interval_of(issued, 0, op).start_us == doctest::Approx(4.0 * (op + 1)));
  // GPU-bound: 10 us GEMMs issued every 0.5 us run back to back from the first issue.
  const sim::result chained = run(0.5, 8, {gemm(0, 0), gemm(0, 1), gemm(0, 2)});
  for (int op = 0; op < 3; ++op) CHECK(interval_of(chained, 1, op).start_us == doctest::Approx(0.5 + 10.0 * op));
  // One hardware queue for two streams: stream 1's GEMM waits behind op 0 for SMs, and runs
  // before op 2 of stream 0, which follows op 0 but is behind it in the queue.
  const sim::result queued = run(0.5, 1, {gemm(0, 0), gemm(1, 1), gemm(0, 2)});
  CHECK(interval_of(queued, 0, 1).start_us == doctest::Approx(10.5));
  CHECK(interval_of(queued, 0, 2).start_us == doctest::Approx(20.5));
  CHECK(queued.step_time_us == doctest::Approx(30.5));
  // Two queues: stream 1's GEMM waits for SMs; when op 0 ends, the higher-priority stream 1 gets
  // them first, and op 2 waits.
  const sim::result prioritized = run(0.5, 8, {gemm(0, 0), gemm(1, 1), gemm(0, 2)}, -1);
  CHECK(interval_of(prioritized, 0, 1).start_us == doctest::Approx(10.5));
  CHECK(interval_of(prioritized, 0, 2).start_us == doctest::Approx(20.5));
  // A record between two GEMMs: the second starts when the first ends.
  const sim::result recorded =
      run(0.5, 8, {gemm(0, 0), {.kind = sc::op_kind::record, .stream = 0, .event = 0}, gemm(0, 1)});
  CHECK(interval_of(recorded, 0, 2).start_us == doctest::Approx(10.5));
}

TEST_CASE("a host sync on an event waits for that event only") {
  sim::machine m = toy();
  m.launch_us = 2;
  const sim::analytic_cost_model cost(m);
  // Without SM contention: stream 0 runs a 10 us GEMM (issued at 2) and records; stream 1 a 20 us
  // one (issued at 6). A sync on the event returns at 12 and the next GEMM is issued at 14; a full
  // host sync returns when the long GEMM ends at 26, and the next GEMM is issued at 28.
  for (const bool on_event : {true, false}) {
    std::vector<sc::program> step;
    for (int rank = 0; rank < 2; ++rank)
      step.push_back(two_rank_program(rank, 2,
                                      {gemm(0, 0),
                                       {.kind = sc::op_kind::record, .stream = 0, .event = 0},
                                       gemm(1, 1, 2e9),
                                       {.kind = sc::op_kind::host_sync, .event = on_event ? 0 : -1},
                                       gemm(0, 2)}));
    REQUIRE(sc::structure_problems(step[0]).empty());
    const sim::result r = sim::simulate(step, cost, {.unlimited_resources = true});
    REQUIRE_FALSE(r.deadlock);
    CHECK(interval_of(r, 0, 2).end_us == doctest::Approx(26.0));
    CHECK(interval_of(r, 0, 4).start_us == doctest::Approx(on_event ? 14.0 : 28.0));
  }
  // Waiting for an event nothing has recorded is a structure problem, as for a stream wait.
  sc::program bad = two_rank_program(0, 1, {{.kind = sc::op_kind::host_sync, .event = 1}});
  const auto problems = sc::structure_problems(bad);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].rule == sc::structure_rule::wait_order);
}

TEST_CASE(
    "each compute op runs for its cost model's time, asked once per shape by the analytic model and per op by a "
    "derived one") {
  // Four GEMMs of one shape in layers 0-3 and one twice as long: alone on the GPU, each runs for
  // what the model says of it. The analytic model reads the shape only (its answers are reused);
  // a derived model that reads the layer must be asked for every op.
  struct by_layer : sim::adjusted_cost_model {
    using sim::adjusted_cost_model::adjusted_cost_model;
    double compute_us(const sc::op& o, int sms) const override {
      return sim::adjusted_cost_model::compute_us(o, sms) + o.key.at.layer;
    }
  };
  const sim::analytic_cost_model analytic(toy());
  const by_layer derived(toy());
  REQUIRE(analytic.compute_reads_inputs_only());
  REQUIRE_FALSE(derived.compute_reads_inputs_only());
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank)
    step.push_back(two_rank_program(rank, 1, {gemm(0, 0), gemm(0, 1), gemm(0, 2), gemm(0, 3), gemm(0, 4, 2e9)}));
  for (const bool unlimited : {false, true}) {
    CAPTURE(unlimited);
    const sim::result a = sim::simulate(step, analytic, {.unlimited_resources = unlimited});
    const sim::result d = sim::simulate(step, derived, {.unlimited_resources = unlimited});
    for (int op = 0; op < 5; ++op) {
      CAPTURE(op);
      const double whole = op < 4 ? 10.0 : 20.0;
      CHECK(interval_of(a, 1, op).end_us - interval_of(a, 1, op).start_us == doctest::Approx(whole));
      CHECK(interval_of(d, 1, op).end_us - interval_of(d, 1, op).start_us == doctest::Approx(whole + op));
    }
  }
}

TEST_CASE("reserve_large gives room for n elements and keeps what the vector holds") {
  std::vector<std::uint32_t> v{1, 2, 3};
  sim::detail::reserve_large(v, 3'000'000);  // 12 MB: a huge-page hint on Linux
  CHECK(v.capacity() >= 3'000'000);
  CHECK(v == std::vector<std::uint32_t>{1, 2, 3});
  const std::uint32_t* data = v.data();
  sim::detail::reserve_large(v, 10);  // room already: nothing moves
  CHECK(v.data() == data);
}

TEST_CASE("huge_page_allocator: a large array sits on whole aligned huge pages and keeps its elements as it grows") {
  using sim::detail::huge_page_bytes;
  sim::detail::large_vector<std::uint64_t> v;
  for (std::uint64_t i = 0; i < 40'000; ++i) v.push_back(i);  // through operator new, then mapped
  CHECK(v.capacity() * sizeof(std::uint64_t) >= huge_page_bytes / 4);
#if defined(__linux__)
  CHECK(reinterpret_cast<std::uintptr_t>(v.data()) % huge_page_bytes == 0);
#endif
  bool kept = true;
  for (std::uint64_t i = 0; i < v.size(); ++i) kept = kept && v[i] == i;
  CHECK(kept);
  v.assign(3'000'000, 7);  // 24 MB: a new, larger mapping, every page written
  CHECK(v.back() == 7);
  v = sim::detail::large_vector<std::uint64_t>(10, 1);  // small again: operator new
  CHECK(v.size() == 10);
  CHECK(sim::detail::huge_page_allocator<std::uint64_t>::mapped_bytes(1) == huge_page_bytes);
  CHECK(sim::detail::huge_page_allocator<std::uint64_t>::mapped_bytes(huge_page_bytes / 8 + 1) == 2 * huge_page_bytes);
  CHECK_THROWS_AS(static_cast<void>(sim::detail::huge_page_allocator<std::uint64_t>().allocate(std::size_t(-1) / 4)),
                  std::bad_array_new_length);
}

TEST_CASE("add_interval then merge gives what merge gives for all the intervals") {
  // Random intervals on a small grid (so that they touch, nest and repeat), in start order with
  // some out of order and some empty: the joined list must be the same, to the bit.
  std::mt19937 random(7);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::pair<double, double>> all, added;
    double at = 0;
    const int count = static_cast<int>(random() % 12);
    for (int k = 0; k < count; ++k) {
      const bool out_of_order = random() % 5 == 0;
      const double s =
          out_of_order ? static_cast<double>(random() % 20) * 0.5 : at + static_cast<double>(random() % 4) * 0.5;
      const double e = s + static_cast<double>(random() % 4) * 0.5 - (random() % 7 == 0 ? 1.0 : 0.0);
      if (!out_of_order) at = s;
      all.emplace_back(s, e);
      sim::detail::add_interval(added, s, e);
    }
    sim::detail::merge(all);
    sim::detail::merge(added);
    CHECK(added == all);
  }
}
