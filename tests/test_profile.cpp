// Machine profiles (sim/machine/profile.hpp, profile_model.hpp, profile_json.hpp): the cost model of the
// H200 preset against every row measured on an H200 (data/measured-h200/), the built-in profile
// against its file, the profile's reading of GEMMs between, beyond and below its grid, and the
// JSON reader's errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/cost/analytic.hpp>
#include <overlap/sim/machine/machine.hpp>
#include <overlap/sim/machine/profile_json.hpp>
#include <overlap/sim/simulate.hpp>

namespace sc = overlap::schedule;
namespace sim = overlap::sim;

namespace {

std::vector<nlohmann::json> rows(const std::string& name) {
  std::ifstream in(std::string(OVERLAP_SOURCE_DIR) + "/data/measured-h200/" + name);
  REQUIRE(in);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

sc::op problem(sc::op_type type, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t groups, double flops) {
  sc::op o;
  o.kind = sc::op_kind::compute;
  o.key.type = type;
  o.gemm = {m, n, k, groups};
  o.flops = flops;
  return o;
}
sc::op gemm(std::int64_t m, std::int64_t n, std::int64_t k) {
  return problem(sc::op_type::fc1_fprop, m, n, k, 1,
                 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
}

/// The H200 preset as the profile's tables were measured: short runs, no power cap.
sim::machine burst(std::string attention_backend = "cudnn") {
  sim::machine m = sim::h200_node();
  m.sustained_load = false;
  m.attention_backend = std::move(attention_backend);
  return m;
}

/// How far apart two times are, as a factor >= 1.
double factor(double predicted, double measured) { return std::max(predicted / measured, measured / predicted); }

struct errors {
  double log_sum = 0, worst = 1;
  int count = 0;
  void add(double f) {
    log_sum += std::log(f);
    worst = std::max(worst, f);
    ++count;
  }
  double geomean() const { return std::exp(log_sum / count); }
};

/// What sim::profile_from_json says of `doc` (read as `source`): its error, or "" when it reads.
std::string profile_error(const nlohmann::json& doc, const std::string& source = "machine profile") {
  try {
    sim::profile_from_json(doc, source);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every GEMM measured on the H200 is predicted within x1.25, and within x1.10 on geometric mean") {
  // What the sweep measured is an eager call's time (analytic_cost_model::eager_us, profile_model.hpp):
  // the GPU's where the work is past the floor, the host's below it. The simulator's GPU time
  // (compute_us) equals it where the GPU set the pace, and is shorter where the host did.
  const sim::analytic_cost_model h200(burst());
  const sim::profile_model& profiled = *h200.profiled();
  errors e;
  int gpu_bound = 0;
  for (const nlohmann::json& r : rows("gemm_sweep.jsonl")) {
    if (r["what"] != "gemm") continue;
    const double m = r["m"], n = r["n"], k = r["k"], measured = r["us"];
    const sc::op o = gemm(r["m"], r["n"], r["k"]);
    const double f = factor(h200.eager_us(o), measured);
    CAPTURE(r.dump());
    CHECK(f <= 1.25);
    CHECK(h200.eager_us(o) == profiled.gemm_measured_us(m, n, k));
    e.add(f);
    const double gpu = h200.compute_us(o, 132);
    if (2 * m * n * k / profiled.measured().sustained_flops_per_us > 2 * 38.6) {  // twice the floor of work
      ++gpu_bound;
      CHECK(gpu == doctest::Approx(measured).epsilon(1e-9));
    } else {
      CHECK(gpu <= measured * (1 + 1e-9));
    }
  }
  CHECK(e.count == 350);
  CHECK(gpu_bound > 100);
  CHECK(e.geomean() <= 1.10);
  MESSAGE("GEMMs: geometric-mean factor " << e.geomean() << ", worst " << e.worst);
}

TEST_CASE("every grouped expert GEMM measured on the H200 is predicted within x1.25") {
  const sim::analytic_cost_model h200(burst());
  const std::map<std::string, std::pair<std::int64_t, std::int64_t>> shapes{{"deepseek_v3", {7168, 2048}},
                                                                            {"gpt_oss_120b", {2880, 2880}}};
  errors e;
  for (const nlohmann::json& r : rows("grouped_gemm_permute.jsonl")) {
    if (r["what"] != "grouped") continue;
    const auto [hidden, ffn] = shapes.at(r["model"]);
    const std::int64_t experts = r["local_experts"], tokens = r["tokens_per_expert"];
    const double rows_flops = 2.0 * static_cast<double>(experts * tokens) * static_cast<double>(hidden * ffn);
    CAPTURE(r.dump());
    // Each measured kernel alone: a grouped problem of its shape.
    const sc::op fc1 = problem(sc::op_type::none, tokens, 2 * ffn, hidden, experts, 2 * rows_flops);
    const sc::op fc2 = problem(sc::op_type::none, tokens, hidden, ffn, experts, rows_flops);
    const double f1 = factor(h200.eager_us(fc1), r["fc1_us"].get<double>());
    const double f2 = factor(h200.eager_us(fc2), r["fc2_us"].get<double>());
    CHECK(h200.eager_us(fc1) == h200.compute_us(fc1, 132));  // past the floor: the GPU's time
    CHECK(f1 <= 1.25);
    CHECK(f2 <= 1.25);
    e.add(f1);
    e.add(f2);
    // The routed experts' forward as the generators emit it: both, as one op.
    const sc::op forward = problem(sc::op_type::experts_fprop, tokens, ffn, hidden, experts, 3 * rows_flops);
    CHECK(factor(h200.eager_us(forward), r["fc1_us"].get<double>() + r["fc2_us"].get<double>()) <= 1.25);
  }
  CHECK(e.count == 28);
  MESSAGE("grouped GEMMs: geometric-mean factor " << e.geomean() << ", worst " << e.worst);
}

TEST_CASE("every attention measured on the H200 is predicted within x1.25, for each backend") {
  for (const char* backend : {"cudnn", "flash"}) {
    const sim::analytic_cost_model h200(burst(backend));
    const std::string name = std::string(backend) == "cudnn" ? "CUDNN_ATTENTION" : "FLASH_ATTENTION";
    errors e;
    for (const nlohmann::json& r : rows("attention.jsonl")) {
      if (r["backend"] != name) continue;
      const std::int64_t seq = r["seq"], heads = r["heads"];
      const double flops = 2.0 * static_cast<double>(seq) * static_cast<double>(seq) * static_cast<double>(heads) * 128;
      const sc::op fwd = problem(sc::op_type::attn_core_fprop, seq, seq, 128, heads, flops);
      const sc::op bwd = problem(sc::op_type::attn_core_bprop, seq, seq, 128, heads, 2.5 * flops);
      CAPTURE(r.dump());
      const double ff = factor(h200.eager_us(fwd), r["fwd_us"].get<double>());
      const double fb = factor(h200.eager_us(bwd), r["bwd_us"].get<double>());
      CHECK(ff <= 1.25);
      CHECK(fb <= 1.25);
      e.add(ff);
      e.add(fb);
      // On the GPU at most that: the smallest were timed by the host (profile_model.hpp).
      CHECK(h200.compute_us(fwd, 132) <= r["fwd_us"].get<double>() * (1 + 1e-9));
      CHECK(h200.compute_us(bwd, 132) <= r["bwd_us"].get<double>() * (1 + 1e-9));
    }
    CHECK(e.count == 30);
    MESSAGE(std::string(backend) << " attention: geometric-mean factor " << e.geomean() << ", worst " << e.worst);
  }
}

TEST_CASE("GEMMs between grid points: each interior grid line held out is predicted from the others") {
  // The profile meets its own rows exactly; shapes between them are what it is for. Each line of
  // the grid (one m, n or k) is taken out in turn and its 50, 35 or 70 GEMMs predicted from the
  // rest, twice the grid's spacing there, so a harder test than a shape between two points.
  const sim::profile& full = *sim::h200_profile();
  errors e;
  int beyond = 0;
  for (int axis = 0; axis < 3; ++axis) {
    const std::vector<std::int64_t>& line = axis == 0 ? full.gemm.m : axis == 1 ? full.gemm.n : full.gemm.k;
    for (std::size_t drop = 1; drop + 1 < line.size(); ++drop) {
      auto held = std::make_shared<sim::profile>(full);
      std::vector<std::int64_t>& cut = axis == 0 ? held->gemm.m : axis == 1 ? held->gemm.n : held->gemm.k;
      cut.erase(cut.begin() + static_cast<std::ptrdiff_t>(drop));
      held->gemm.us.clear();
      for (std::size_t i = 0; i < full.gemm.m.size(); ++i)
        for (std::size_t j = 0; j < full.gemm.n.size(); ++j)
          for (std::size_t l = 0; l < full.gemm.k.size(); ++l)
            if ((axis == 0 ? i : axis == 1 ? j : l) != drop) held->gemm.us.push_back(full.gemm.at(i, j, l));
      sim::machine m = burst();
      m.profile = held;
      const sim::analytic_cost_model model(m);
      for (std::size_t i = 0; i < full.gemm.m.size(); ++i)
        for (std::size_t j = 0; j < full.gemm.n.size(); ++j)
          for (std::size_t l = 0; l < full.gemm.k.size(); ++l) {
            if ((axis == 0 ? i : axis == 1 ? j : l) != drop) continue;
            const sc::op o = gemm(full.gemm.m[i], full.gemm.n[j], full.gemm.k[l]);
            const double f = factor(model.eager_us(o), full.gemm.at(i, j, l));
            e.add(f);
            beyond += f > 1.25 ? 1 : 0;
          }
    }
  }
  CHECK(e.count == 5 * 50 + 8 * 35 + 3 * 70);
  CHECK(e.geomean() <= 1.07);
  CHECK(beyond <= e.count / 100);
  MESSAGE("held-out GEMMs: geometric-mean factor " << e.geomean() << ", worst " << e.worst << ", " << beyond << " of "
                                                   << e.count << " beyond x1.25");
}

TEST_CASE("grouped GEMMs of a model the profile has not measured: each model predicted from the other's rows") {
  const sim::profile& full = *sim::h200_profile();
  for (const std::int64_t hidden : {7168, 2880}) {
    auto held = std::make_shared<sim::profile>(full);
    std::vector<sim::grouped_gemm_entry> other, own;
    for (const sim::grouped_gemm_entry& g : full.grouped_gemm)
      ((g.k == hidden || g.n == hidden) ? own : other).push_back(g);
    held->grouped_gemm = other;
    sim::machine m = burst();
    m.profile = held;
    const sim::analytic_cost_model model(m);
    CAPTURE(hidden);
    CHECK(own.size() == 14);
    for (const sim::grouped_gemm_entry& g : own) {
      const double flops = 2.0 * static_cast<double>(g.groups * g.m) * static_cast<double>(g.n * g.k);
      CHECK(factor(model.compute_us(problem(sc::op_type::none, g.m, g.n, g.k, g.groups, flops), 132), g.us) <= 1.25);
    }
  }
}

TEST_CASE("the built-in H200 profile is data/profiles/h200.json, and a profile survives JSON both ways") {
  const sim::profile file = sim::read_profile(std::string(OVERLAP_SOURCE_DIR) + "/data/profiles/h200.json");
  CHECK(file == *sim::h200_profile());  // else: scripts/h200_profile.py
  CHECK(sim::profile_from_json(sim::to_json(file)) == file);
  CHECK(file.gemm.us.size() == 350);
  CHECK(file.grouped_gemm.size() == 28);
  CHECK(file.attention_of("cudnn") != nullptr);
  CHECK(file.attention_of("flash") != nullptr);
  CHECK(file.attention_of("triton") == nullptr);
}

TEST_CASE("a profile's GEMMs: the power cap, the floor, fewer SMs, and shapes beyond the grid") {
  const sim::analytic_cost_model sustained(sim::h200_node()), short_runs(burst());
  const sim::profile& p = *sim::h200_profile();
  // 8192^3 ran at 753 TFLOP/s in the sweep; at the power limit no GEMM beats the sustained rate.
  const sc::op big = gemm(8192, 8192, 8192);
  CHECK(short_runs.compute_us(big, 132) == doctest::Approx(1459.8).epsilon(0.001));
  CHECK(sustained.compute_us(big, 132) == doctest::Approx(big.flops / p.sustained_flops_per_us));
  // A GEMM far below the grid: an eager caller waits the host's floor for it, the GPU runs it in
  // its analytic time (the wave model's one tile), which the floor caps.
  CHECK(short_runs.eager_us(gemm(64, 64, 64)) == doctest::Approx(38.6).epsilon(0.05));
  sim::machine no_profile = burst();
  no_profile.profile = nullptr;
  CHECK(short_runs.compute_us(gemm(64, 64, 64), 132) ==
        doctest::Approx(sim::analytic_cost_model(no_profile).compute_us(gemm(64, 64, 64), 132)).epsilon(0.05));
  CHECK(short_runs.compute_us(gemm(64, 64, 64), 132) < 5);
  CHECK(short_runs.compute_us(gemm(1024, 1024, 1024), 132) < 20);
  // Beyond the grid a shape keeps the edge's efficiency: twice the k, twice the time.
  CHECK(short_runs.compute_us(gemm(16384, 28672, 16384), 132) ==
        doctest::Approx(2 * short_runs.compute_us(gemm(16384, 28672, 8192), 132)));
  // Between grid points, between their times.
  const double low = short_runs.compute_us(gemm(4096, 4096, 4096), 132);
  const double high = short_runs.compute_us(gemm(8192, 4096, 4096), 132);
  const double mid = short_runs.compute_us(gemm(6144, 4096, 4096), 132);
  CHECK(mid > low);
  CHECK(mid < high);
  // Fewer SMs never make an op faster, and half the SMs about double a large GEMM.
  for (const sc::op& o : {gemm(512, 768, 4096), gemm(4096, 4096, 4096), big,
                          problem(sc::op_type::experts_fprop, 512, 2048, 7168, 64, 1e12),
                          problem(sc::op_type::attn_core_fprop, 8192, 8192, 128, 32, 2.0 * 8192 * 8192 * 32 * 128)}) {
    CAPTURE(sc::to_string(o.key.type));
    double previous = sustained.compute_us(o, 1);
    for (int sms = 2; sms <= 132; ++sms) {
      const double now = sustained.compute_us(o, sms);
      CHECK(now <= previous * (1 + 1e-12));
      previous = now;
    }
  }
  CHECK(sustained.compute_us(big, 66) == doctest::Approx(2 * sustained.compute_us(big, 132)).epsilon(0.02));
}

TEST_CASE("the H100 preset computes as the H200 profile with the H100's memory") {
  const sim::analytic_cost_model h100(sim::h100_node()), h200(sim::h200_node());
  CHECK(h100.machine().profile == h200.machine().profile);
  CHECK(h100.compute_us(gemm(8192, 8192, 8192), 132) == h200.compute_us(gemm(8192, 8192, 8192), 132));
  sc::op norm;
  norm.key.type = sc::op_type::layernorm_fprop;
  norm.memory_bytes = std::int64_t{1} << 30;
  CHECK(h100.compute_us(norm, 132) == doctest::Approx(norm.memory_bytes / (3.35e6 * 0.9)));
  CHECK(h200.compute_us(norm, 132) == doctest::Approx(norm.memory_bytes / sim::h200_profile()->memory_bytes_per_us));
  // Grouped GEMMs of few tokens per expert read every expert's weights: slower on the H100's HBM.
  const sc::op experts = problem(sc::op_type::experts_fprop, 128, 2048, 7168, 256, 6.0 * 256 * 128 * 2048 * 7168);
  CHECK(h100.compute_us(experts, 132) > 1.1 * h200.compute_us(experts, 132));
  // Without a backend's table, attention keeps the analytic efficiency.
  sim::machine other = sim::h200_node();
  other.attention_backend = "triton";
  const sc::op fwd = problem(sc::op_type::attn_core_fprop, 8192, 8192, 128, 32, 2.0 * 8192 * 8192 * 32 * 128);
  const sim::analytic_cost_model no_table(other);
  sim::machine analytic = other;
  analytic.profile = nullptr;
  analytic.memory_bytes_per_us = other.memory_bytes_per_us;
  CHECK(no_table.compute_us(fwd, 132) == sim::analytic_cost_model(analytic).compute_us(fwd, 132));
}

TEST_CASE("the two-stream probe sets the SM model of the H200 and H100 presets") {
  // data/measured-h200/concurrency.jsonl (concur2.py): the copy kernel of 16 CTAs alone 1,082 us;
  // packed 4 to an SM on 4 SMs in a GEMM's tail, 2,914.2 us; one to an SM beside the GEMM,
  // 1,265.1 us. An SM moves 16 x 1082 / (4 x 2914.2) = 1.485 CTAs' worth; beside a GEMM 16.9 %
  // slower. The GEMM alone 1,427.6 us; both side by side 1,628.3: after the copy the GEMM had
  // 1628.3 - 1265.1 us left, so beside it it did 1427.6 - 363.2 = 1064.4 us of its work in 1,265.1
  // on 116 of the 132 SMs, 4.4 % slower than those SMs alone, with the copy at 1082 / 1265.1 of its
  // rate: 5.2 % per copy's rate.
  for (const sim::machine& m : {sim::h200_node(), sim::h100_node()}) {
    CAPTURE(m.name);
    CHECK(m.comm_ctas_per_sm == 4);
    CHECK(m.comm_sm_share == doctest::Approx(16 * 1082.0 / (4 * 2914.2)));
    CHECK(m.comm_interference == doctest::Approx(1265.1 / 1082.0 - 1));
    CHECK(m.compute_interference == doctest::Approx((116.0 / 132 * 1265.1 / 1064.4 - 1) * 1265.1 / 1082));
    CHECK(m.compute_interference == doctest::Approx(0.052).epsilon(0.01));
  }
  // Without the probe's figures the machine keeps its own (no packing, no interference).
  sim::machine m = sim::h100_node();
  m.comm_ctas_per_sm = 0;
  m.comm_interference = 0;
  m.compute_interference = 0;
  sim::concurrency_probe half = m.profile->concurrency;
  half.copy_packed_us = 0;
  half.copy_beside_gemm_us = 0;
  sim::with_sm_probe(m, half);
  CHECK(m.comm_ctas_per_sm == 0);
  CHECK(m.comm_interference == 0);
  CHECK(m.compute_interference == 0);
  // Out-of-range probe figures are problems.
  sim::profile p = *sim::h200_profile();
  p.concurrency.copy_packed_us = -1;
  p.concurrency.copy_beside_gemm_us = std::nan("");
  const auto problems = sim::problems(p);
  CHECK(std::count_if(problems.begin(), problems.end(), [](const std::string& x) {
          return x.starts_with("concurrency.copy_packed_us") || x.starts_with("concurrency.copy_beside_gemm_us");
        }) == 2);
}

TEST_CASE("a profile's problems are named by their JSON paths, all at once") {
  nlohmann::json doc = sim::to_json(*sim::h200_profile());
  doc["version"] = 2;
  doc["sms"] = "many";
  doc["gemm"]["us"][3] = -1;
  doc["gemm"]["k"][1] = 100;
  doc["grouped_gemm"][0].erase("us");
  doc["attention"][1]["backend"] = "cudnn";
  doc["colour"] = "green";
  std::string what = profile_error(doc, "hand-made");
  CHECK(what.find("hand-made: ") == 0);
  for (const char* part : {"version: 2; this library reads version 1", "sms: not a whole number",
                           "grouped_gemm[0].us: missing", "colour: unknown key"})
    CHECK(what.find(part) != std::string::npos);
  // The value problems show once the types are right.
  doc["sms"] = 132;
  doc["version"] = 1;
  doc["grouped_gemm"][0]["us"] = 10;
  doc.erase("colour");
  what = profile_error(doc);
  for (const char* part : {"gemm.k[1]: 100 does not ascend from 512", "gemm.us[3]: not a time in (0, 1e9] us",
                           "attention[1].backend: \"cudnn\" is given twice"})
    CHECK(what.find(part) != std::string::npos);
  CHECK_THROWS_WITH_AS(sim::profile_from_json(nlohmann::json::array()), doctest::Contains("not an object"),
                       std::invalid_argument);
  CHECK_THROWS_AS(sim::read_profile("/nonexistent/profile.json"), std::runtime_error);
  // The cost model refuses a profile built in code with problems, as the reader does.
  sim::machine bad = sim::h200_node();
  auto broken = std::make_shared<sim::profile>(*sim::h200_profile());
  broken->gemm.us.pop_back();
  bad.profile = broken;
  CHECK_THROWS_WITH_AS(sim::analytic_cost_model{bad}, doctest::Contains("gemm.us: 349 times for a grid of 350 points"),
                       std::invalid_argument);
}

TEST_CASE("a profile file made by hand plans a step: its SMs, host costs and GEMM times reach the simulator") {
  const std::string path = std::string(OVERLAP_SOURCE_DIR) + "/tests/profiles/hand_made.json";
  const auto p = std::make_shared<const sim::profile>(sim::read_profile(path));
  const sim::machine m = sim::with_profile(sim::h100_node(), p);
  CHECK(m.sms == 100);
  CHECK(m.launch_us == 5);
  CHECK(m.event_us == 1);
  CHECK(m.memory_bytes_per_us * m.memory_efficiency == 2e6);
  // Its GEMMs take 10 us + flops at 200 TFLOP/s on a 2 x 2 x 2 grid of 1024 and 4096. By hand, a
  // 2048^3 GEMM between them: the best rate is 4096^3's (697.2 us), the floor 1024^3's 20.7 us
  // (the one GEMM whose flops at that rate take less than the shortest time); the base at 2048^3
  // is its flops at the best rate, and the quotient the mean, in log space, of the eight
  // corners' time over base.
  const double best = 2.0 * 4096 * 4096 * 4096 / 697.2;
  const auto base = [&](double mm, double n, double k) { return std::max(20.7, 2 * mm * n * k / best); };
  double log_ratio = 0;
  for (const double a : {1024.0, 4096.0})
    for (const double b : {1024.0, 4096.0})
      for (const double c : {1024.0, 4096.0}) {
        const double us = std::round((10 + 2 * a * b * c / 2e8) * 10) / 10;  // the file's, to 0.1 us
        log_ratio += std::log(us / base(a, b, c)) / 8;
      }
  const double want = base(2048, 2048, 2048) * std::exp(log_ratio);
  const sim::analytic_cost_model cost(m);
  CHECK(cost.compute_us(gemm(2048, 2048, 2048), 100) == doctest::Approx(want).epsilon(1e-9));
  // A one-rank program of that GEMM: the host launches it, then the GPU runs it.
  sc::program prog;
  prog.streams = {{sc::stream_role::compute, 0}};
  prog.ops = {gemm(2048, 2048, 2048)};
  const sim::result r = sim::simulate({prog}, cost);
  CHECK(r.step_time_us == doctest::Approx(5 + want).epsilon(1e-9));
  // An event recorded first costs the host the profile's event time, not a launch.
  prog.num_events = 1;
  prog.ops.insert(prog.ops.begin(), sc::op{.kind = sc::op_kind::record, .stream = 0, .event = 0});
  CHECK(sim::simulate({prog}, cost).step_time_us == doctest::Approx(1 + 5 + want).epsilon(1e-9));
  // A generated step runs on it too.
  sc::workload w;
  w.num_layers = 2;
  w.micro_batches = 2;
  w.seq_length = 2048;
  w.hidden_size = 2048;
  w.ffn_hidden_size = 4096;
  w.num_attention_heads = 16;
  w.vocab_size = 32000;
  overlap::settings s;
  s.data_parallel_size = 2;
  s.precision = overlap::dtype::bf16;
  const auto step = sc::compose_step(s, overlap::derive(s), w);
  const sim::result planned = sim::simulate(step, cost);
  CHECK_FALSE(planned.deadlock);
  CHECK(planned.step_time_us > 0);
}

TEST_CASE("a missing key is one problem, a null one is the wrong type") {
  nlohmann::json doc = sim::to_json(*sim::h200_profile());
  doc.erase("sms");
  doc["memory_bytes_per_us"] = nullptr;
  doc["gemm"]["m"] = nullptr;
  const std::string what = profile_error(doc, "p");
  CHECK(what.find("p: 3 problems:") == 0);
  CHECK(what.find("sms: missing") != std::string::npos);
  CHECK(what.find("memory_bytes_per_us: not a number") != std::string::npos);
  CHECK(what.find("gemm.m: not an array") != std::string::npos);
  doc = sim::to_json(*sim::h200_profile());
  doc.erase("gemm");
  CHECK_THROWS_WITH_AS(sim::profile_from_json(doc, "p"), "p: 1 problem:\n  gemm: missing", std::invalid_argument);
  doc["gemm"] = nullptr;
  CHECK_THROWS_WITH_AS(sim::profile_from_json(doc, "p"), "p: 1 problem:\n  gemm: not an object", std::invalid_argument);
}
