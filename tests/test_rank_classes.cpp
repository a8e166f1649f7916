// Symmetric rank classes (program/rank_classes.hpp, schedule/classes.hpp): MoE and pipeline
// layouts beyond the grid and placements that break symmetry simulate once per class exactly as
// in full; class maps that cannot stand for the step are rejected; traces show one row group per
// class.
#include <doctest/doctest.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/plan/parallel.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/schedule/classes.hpp>
#include <overlap/trace/chrome_trace.hpp>
#include <overlap/trace/svg_timeline.hpp>
#include <overlap/verify/verify.hpp>

#include "class_check.hpp"

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {

struct layout_case {
  const char* name;
  int tp, pp, vpp, dp, ep, gpus_per_node;
  bool overlap;
};

ov::settings settings_of(const layout_case& c) {
  ov::settings s;
  s.tensor_model_parallel_size = c.tp;
  s.pipeline_model_parallel_size = c.pp;
  if (c.vpp > 1) s.virtual_pipeline_model_parallel_size = c.vpp;
  s.data_parallel_size = c.dp;
  s.precision = ov::dtype::bf16;
  s.sequence_parallel = c.tp > 1;
  s.distributed_optimizer = true;
  s.overlap_grad_reduce = c.overlap && c.dp > 1;
  s.overlap_param_gather = c.overlap && c.dp > 1;
  if (c.tp > 1) s.tp_comm_overlap = c.overlap;
  if (c.ep > 0) {
    s.num_moe_experts = 16;
    s.expert_model_parallel_size = c.ep;
    s.expert_tensor_parallel_size = 1;
    s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
    if (c.ep > 1) s.overlap_moe_expert_parallel_comm = c.overlap;
  }
  return s;
}

const sc::workload small{.num_layers = 8,
                         .micro_batches = 8,
                         .seq_length = 1024,
                         .hidden_size = 1024,
                         .ffn_hidden_size = 3584,
                         .moe_router_topk = 2,
                         .moe_ffn_hidden_size = 512};

sc::workload workload_of(const layout_case& c) {
  sc::workload w = small;
  if (c.ep == 0) w.moe_router_topk = w.moe_ffn_hidden_size = 0;
  return w;
}

ov::sim::analytic_cost_model cost_of(int gpus_per_node) {
  ov::sim::machine m = ov::sim::h100_node();
  m.gpus_per_node = gpus_per_node;
  return ov::sim::analytic_cost_model(m);
}

}  // namespace

TEST_CASE("MoE and pipeline layouts, and placements that break symmetry, simulate once per class as in full") {
  const std::vector<layout_case> cases = {
      {"moe tp2 pp4 vpp2 dp4 ep4, overlap", 2, 4, 2, 4, 4, 8, true},
      {"moe tp1 pp2 vpp2 dp16 ep8, overlap", 1, 2, 2, 16, 8, 8, true},
      {"moe tp2 pp2 dp8 ep16 (ep groups across replicas), no overlap", 2, 2, 1, 8, 16, 8, false},
      {"dense tp1 pp4 dp3: stages straddle nodes", 1, 4, 1, 3, 0, 8, true},
      {"dense tp2 pp2 dp4 on 6-GPU nodes", 2, 2, 1, 4, 0, 6, true},
      {"moe tp1 pp2 vpp2 dp6 ep2 on 4-GPU nodes", 1, 2, 2, 6, 2, 4, true},
      {"dense tp4 pp2 dp2, overlap (rings of four)", 4, 2, 1, 2, 0, 8, true},
      {"dense tp4 pp2 dp2 on 2-GPU nodes: tp groups leave the node", 4, 2, 1, 2, 0, 2, true},
  };
  std::vector<class_comparison> out(cases.size());
  ov::plan::parallel_for(cases.size(), [&](std::size_t i) {
    const ov::settings s = settings_of(cases[i]);
    const auto cost = cost_of(cases[i].gpus_per_node);
    const sc::workload w = workload_of(cases[i]);
    const auto full_step = sc::compose_step(s, ov::derive(s), w);
    out[i] = compare_classes(s, w, cost, full_step,
                             ov::sim::simulate(full_step, cost, ov::plan::options_for(ov::derive(s))));
  });
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string name = cases[i].name;
    CAPTURE(name);
    check(out[i]);
    CHECK(out[i].representatives < out[i].world);
    MESSAGE(name << ": " << out[i].representatives << " representatives for " << out[i].world << " ranks");
  }
  // A regular layout: one representative per stage (tp position 0 of data-parallel replica 0),
  // TP overlap's rings included: a tp group inside a node is one program turned.
  CHECK(out[0].representatives == 4);
  CHECK(out[1].representatives == 2);
  CHECK(out[6].representatives == 2);
  // Where placement differs within a stage, the stage has more than one class; so do tp positions
  // whose group leaves the node.
  CHECK(out[3].representatives > 4);
  CHECK(out[4].representatives > 2);
  CHECK(out[7].representatives == 4 * 2);
}

TEST_CASE("a class map whose representatives do not share their rendezvous is rejected") {
  // No TP overlap: the tp group's ops are collectives only.
  const layout_case c{"", 2, 2, 1, 2, 0, 8, false};
  const ov::settings s = settings_of(c);
  const ov::resolved_settings r = ov::derive(s);
  const sc::workload w = workload_of(c);
  const auto cost = cost_of(8);
  const sc::rank_classes good = sc::symmetric_classes(s, r, w, 8);
  CHECK(good.representatives() == std::vector<int>{0, 4});
  CHECK(good.sizes()[0] == 4);
  CHECK_NOTHROW(ov::sim::simulate(sc::compose_step(s, r, w, good), cost, good));

  // Rank 1 (tp 1 of replica 0) stood for by rank 3 (tp 1 of replica 1): rank 0's tp group
  // {0, 1} has rank 1 absent and its representative 3 outside the group.
  sc::rank_classes bad = good;
  bad.representative = {0, 3, 0, 3, 4, 5, 4, 5};
  const auto reps = sc::compose_step(s, r, w, bad);
  CHECK(sc::class_problems(reps, bad).find("has rank 1 absent and its representative 3 is not a member") !=
        std::string::npos);
  CHECK_THROWS_WITH_AS(ov::sim::simulate(reps, cost, bad),
                       doctest::Contains("the programs cannot stand for the step of their class map"),
                       std::invalid_argument);

  // Rank 4's program missing: rank 0 sends to it (its pipeline neighbour).
  std::vector<sc::program> no_neighbour = sc::compose_step(s, r, w, good);
  no_neighbour.pop_back();
  CHECK(sc::class_problems(no_neighbour, good).find("needs both sides present") != std::string::npos);
  CHECK_THROWS_AS(ov::sim::simulate(no_neighbour, cost, good), std::invalid_argument);

  // Not a partition named by its representatives.
  sc::rank_classes loop = good;
  loop.representative[1] = 2;
  CHECK(sc::class_problems(sc::compose_step(s, r, w, good), loop).find("not a representative") != std::string::npos);
}

TEST_CASE("the verifier checks a class step on its representatives, with the full step's findings") {
  const layout_case c{"", 2, 2, 1, 2, 0, 8, true};  // reps 0 (stage 0) and 4 (stage 1)
  const ov::settings s = settings_of(c);
  const ov::resolved_settings r = ov::derive(s);
  const sc::workload w = workload_of(c);
  const sc::class_step step = sc::compose_class_step(s, r, w, 8);
  REQUIRE(step.classes.representatives() == std::vector<int>{0, 4});
  // Absent members by design are no finding; the same programs as a full step are short of them.
  CHECK(ov::verify::verify(step.representatives, step.classes).empty());
  CHECK_FALSE(ov::verify::verify(step.representatives).empty());

  // A fault of a representative is its class's: found once, where the full step finds it on
  // every member. Rank 0's dp reduce-scatter issued without waiting for its gradients.
  const auto first_of = [](const sc::program& p, auto pred) {
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      if (pred(p.ops[i])) return i;
    return p.ops.size();
  };
  const auto drop_dp_waits = [&](sc::program& p) {
    std::erase_if(p.ops, [&](const sc::op& o) {
      return o.kind == sc::op_kind::wait &&
             p.streams[static_cast<std::size_t>(o.stream)].role == sc::stream_role::dp_comm;
    });
  };
  {
    std::vector<sc::program> reps = step.representatives;
    drop_dp_waits(reps[0]);
    const auto found = ov::verify::verify(reps, step.classes);
    REQUIRE_FALSE(found.empty());
    CHECK(found.front().rank == 0);
    CHECK(found.front().reason.find("without depending on op") != std::string::npos);
    std::vector<sc::program> full = sc::compose_step(s, r, w);
    for (sc::program& p : full)
      if (step.classes.representative[static_cast<std::size_t>(p.rank)] == 0) drop_dp_waits(p);
    const auto full_found = ov::verify::verify(full);
    REQUIRE_FALSE(full_found.empty());
    CHECK(full_found.front().reason == found.front().reason);
  }
  // The verifier's first finding on the class step with representative `rep`'s first recv on a
  // communicator whose name starts with `prefix` 2 bytes larger.
  const auto recv_grown = [&](std::size_t rep, const char* prefix) {
    std::vector<sc::program> reps = step.representatives;
    sc::program& p = reps[rep];
    const std::size_t i = first_of(p, [&](const sc::op& o) {
      return o.kind == sc::op_kind::recv && p.comms[static_cast<std::size_t>(o.comm)].name.starts_with(prefix);
    });
    REQUIRE(i < p.ops.size());
    p.ops[i].bytes += 2;
    const auto found = ov::verify::verify(reps, step.classes);
    REQUIRE_FALSE(found.empty());
    return found.front();
  };
  // Present members (pipeline neighbours 0 and 4) disagree on a message's size, as in the full
  // step; and a ring peer of the rank's own class (tp group {0, 1}) is the rank turned: a recv
  // that disagrees with its own send is a hang, as the full step's rank 1 would see it.
  for (const std::pair<std::size_t, const char*>& c : {std::pair<std::size_t, const char*>{1, "pp"}, {0, "tp"}}) {
    CAPTURE(c.second);
    const auto finding = recv_grown(c.first, c.second);
    CHECK(finding.rank == 0);
    CHECK(finding.reason.find("meets a recv of") != std::string::npos);
  }
  {  // The map broken: one finding for the step, described as such.
    sc::rank_classes bad = step.classes;
    bad.representative[1] = 3;
    const auto found = ov::verify::verify(step.representatives, bad);
    REQUIRE(found.size() == 1);
    CHECK(found.front().rank == -1);
    CHECK(ov::verify::describe(found.front(), step.representatives)
              .starts_with("step: the programs cannot stand for the step of their class map: "));
  }
}

TEST_CASE("the structural check tells ranks apart whose programs differ") {
  const layout_case c{"", 1, 2, 1, 2, 0, 8, true};
  const ov::settings s = settings_of(c);
  const auto full = sc::compose_step(s, ov::derive(s), workload_of(c));
  sc::rank_classes classes = sc::symmetric_classes(s, ov::derive(s), workload_of(c), 8);
  CHECK(classes.representative == std::vector<int>{0, 0, 2, 2});
  CHECK(sc::asymmetries(full, classes, 8).empty());
  // The first and the last stage are not symmetric (embedding, head, warm-up).
  classes.representative = {0, 0, 0, 0};
  CHECK_FALSE(sc::asymmetries(full, classes, 8).empty());
  // On 3-GPU nodes rank 1 sends to rank 3 on the next node, rank 0 to rank 2 on its own: for
  // the cost model they differ, and symmetric_classes keeps every rank apart.
  classes.representative = {0, 0, 2, 2};
  CHECK_FALSE(sc::asymmetries(full, classes, 3).empty());
  CHECK(sc::symmetric_classes(s, ov::derive(s), workload_of(c), 3).representative == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("traces of a class simulation show one representative per class, with its class size") {
  const layout_case c{"", 1, 2, 1, 4, 0, 8, true};
  const ov::settings s = settings_of(c);
  const ov::resolved_settings r = ov::derive(s);
  const auto cost = cost_of(8);
  const sc::class_step step = sc::compose_class_step(s, r, workload_of(c), 8);
  REQUIRE(step.classes.representatives() == std::vector<int>{0, 4});
  const ov::sim::result res = ov::sim::simulate(step.representatives, cost, step.classes);
  std::ostringstream json, svg, plain;
  ov::trace::write_chrome_trace(json, step.representatives, res, &step.classes);
  ov::trace::write_svg_timeline(svg, step.representatives, res, {}, &step.classes);
  ov::trace::write_chrome_trace(plain, step.representatives, res);
  for (const std::string& text : {json.str(), svg.str()}) {
    CHECK(text.find("rank 0 (class of 4)") != std::string::npos);
    CHECK(text.find("rank 4 (class of 4)") != std::string::npos);
    CHECK(text.find("rank 1") == std::string::npos);
  }
  CHECK(plain.str().find("class of") == std::string::npos);
  // The picture has a row per stream of the two representatives, not of the eight ranks.
  std::size_t rows = 0;
  for (const auto& p : step.representatives) rows += p.streams.size();
  std::size_t labels = 0;
  for (std::size_t at = 0; (at = svg.str().find("(class of 4) ", at)) != std::string::npos; ++at) ++labels;
  CHECK(labels == rows);
}

TEST_CASE("the classes of the largest layout (131,072 ranks) are found in linear time and memory") {
  // L-5's bound with dp 32,768: each rank's key once held every dp member's class, and each
  // representative searched its dp group per member (minutes, then bad_alloc past 8 GB).
  ov::settings s = settings_of({"tp2 pp2 dp32768", 2, 2, 1, 32768, 0, 8, true});
  const auto start = std::chrono::steady_clock::now();
  const sc::rank_classes c = sc::symmetric_classes(s, ov::derive(s), workload_of({"", 2, 2, 1, 32768, 0, 8, true}), 8);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(c.world() == 131072);
  CHECK(c.representatives().size() == 2);  // a stage each: its tp group is inside a node
  CHECK(seconds < 10);
  // The same classes as the same layout at a size the old refinement handled: one per stage,
  // represented by tp position 0 of data-parallel replica 0.
  for (const int rep : c.representatives()) CHECK(rep % (2 * 32768) == 0);
}

TEST_CASE("a step too large to generate rank by rank is generated once per class") {
  // 131,072 ranks x (4 layers + 2) x 16 micro-batches x 2 passes is over max_layer_passes; the
  // two classes' programs are not.
  const layout_case c{"", 2, 2, 1, 32768, 0, 8, true};
  const ov::settings s = settings_of(c);
  sc::workload w = workload_of(c);
  w.micro_batches = 16;
  CHECK_THROWS_WITH_AS(sc::compose_step(s, ov::derive(s), w),
                       doctest::Contains("the step is too large to generate: 131072 programs x 192 layer passes"),
                       std::invalid_argument);
  const sc::class_step step = sc::compose_class_step(s, ov::derive(s), w, 8);
  CHECK(step.representatives.size() == 2);
  // Per class, what a rank alone generates is the limit.
  w.micro_batches = 1 << 22;
  CHECK_THROWS_WITH_AS(sc::compose_class_step(s, ov::derive(s), w, 8),
                       doctest::Contains("of one rank is over 16777216 layer passes"), std::invalid_argument);
}
