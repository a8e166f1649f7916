// Concurrency: the two-stream patterns measured on one H200 (data/measured-h200/concurrency.jsonl,
// the whole-kernel rows of concur.py) against the simulator. "G" is a cuBLAS 8192^3 bf16 GEMM on
// one stream; "C" a copy kernel of `blocks` CTAs on another, the shape of an NCCL kernel of as many
// channels; issued in the pattern's order from one host thread at CUDA_DEVICE_MAX_CONNECTIONS 1, 8
// or 32. Here each pattern is a program of the library on the H200 preset: G a GEMM op of that
// shape, C an all-gather of a 2-rank NVLink communicator whose kernel holds `blocks` SMs, with its
// bytes set so that C alone takes its measured time (both ranks run the pattern). Prints
// {"records":[...]}: per measured row, the measured and simulated totals and their ratio; per
// pattern, the CDMC 8 / CDMC 1 (and 32 / 1) ratio, measured and simulated. The issue on the GPU's
// SM and queue behaviour asks for every total within 10 % and every ratio within 0.1; the bench
// prints how many are ("within"), and fails (exit 1) when a total leaves +-15 % or a ratio +-0.2:
// the band it is pinned to (one row misses the bar: GC at CDMC 32, measured 10 % slower
// than at CDMC 8 and 12 % slower than at priority -5, where priority changes nothing).
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include <overlap/sim/simulate.hpp>

namespace sc = overlap::schedule;
namespace sim = overlap::sim;

namespace {

/// Rank `rank` of the 2-rank step that runs `pattern`: G on stream 0, C on stream 1 (priority
/// `priority`), C of `bytes` on `blocks` SMs.
sc::program pattern_program(int rank, const std::string& pattern, int cdmc, int priority, int blocks,
                            std::int64_t bytes) {
  sc::program p;
  p.rank = rank;
  p.cuda_device_max_connections = cdmc;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::tp_comm, priority}};
  p.comms = {{"pair", {0, 1}}};
  std::int64_t seq = 0;
  int layer = 0;
  for (const char c : pattern) {
    if (c == 'G') {
      constexpr std::int64_t n = 8192;
      p.ops.push_back(sc::op{.kind = sc::op_kind::compute,
                             .stream = 0,
                             .key = {.type = sc::op_type::fc1_fprop, .at = {.layer = layer++}},
                             .flops = 2.0 * n * n * n,
                             .gemm = {n, n, n, 1}});
    } else {
      p.ops.push_back(sc::op{.kind = sc::op_kind::collective,
                             .stream = 1,
                             .key = {.type = sc::op_type::tp_all_gather, .at = {.layer = static_cast<int>(seq)}},
                             .coll = sc::collective::all_gather,
                             .comm = 0,
                             .seq = seq,
                             .bytes = bytes,
                             .sms = blocks});
      ++seq;
    }
  }
  return p;
}

double simulate(const sim::cost_model& cost, const std::string& pattern, int cdmc, int priority, int blocks,
                std::int64_t bytes) {
  const std::vector<sc::program> step{pattern_program(0, pattern, cdmc, priority, blocks, bytes),
                                      pattern_program(1, pattern, cdmc, priority, blocks, bytes)};
  const sim::result r = sim::simulate(step, cost);
  if (r.deadlock) throw std::runtime_error("pattern " + pattern + " hangs:\n" + r.wait_for_graph);
  return r.step_time_us;
}

/// The bytes for which C alone takes `target_us` at `blocks` SMs (its time is affine in its bytes).
std::int64_t bytes_for(const sim::cost_model& cost, int blocks, double target_us) {
  const std::int64_t a = 1 << 20, b = 1 << 28;
  const double ta = simulate(cost, "C", 1, 0, blocks, a), tb = simulate(cost, "C", 1, 0, blocks, b);
  return static_cast<std::int64_t>(std::llround(a + (target_us - ta) * static_cast<double>(b - a) / (tb - ta)));
}

}  // namespace

int main() {
  std::ifstream in(std::string(OVERLAP_SOURCE_DIR) + "/data/measured-h200/concurrency.jsonl");
  if (!in) {
    std::fprintf(stderr, "concurrency: cannot read data/measured-h200/concurrency.jsonl\n");
    return 1;
  }
  // Each pattern ran for 2-35 ms after a warm-up, a burst: the GPU never reached its power limit
  // (it takes about a second; data/measured-h200/memory_and_clock.jsonl), so no sustained clock.
  sim::machine h200 = sim::h200_node();
  h200.sustained_load = false;
  const sim::analytic_cost_model cost(h200);
  struct row {
    std::string pattern;
    int cdmc, priority, blocks;
    double measured_us;
  };
  std::vector<row> rows;
  // C alone at CDMC 1, per width: the "C" row for 16 CTAs; for 132 and 2 CTAs, the last C of a
  // pattern at CDMC 1 (GC, GCGCGCGC), which runs after every GEMM has ended.
  std::map<int, double> c_alone;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.value("source", std::string()).starts_with("concur.py")) continue;
    rows.push_back({j.at("pattern").get<std::string>(), std::stoi(j.at("cdmc").get<std::string>()),
                    j.at("prio_comm").get<int>(), j.at("blocks").get<int>(), j.at("total_us").get<double>()});
    const row& r = rows.back();
    if (r.cdmc != 1 || r.priority != 0) continue;
    if (r.pattern == "C") c_alone[r.blocks] = r.measured_us;
    if (r.blocks != 16 && !j.at("comm_us").empty()) {
      const auto& last = j.at("comm_us").back();
      c_alone[r.blocks] = last.at(1).get<double>() - last.at(0).get<double>();
    }
  }
  std::map<int, std::int64_t> bytes;
  for (const auto& [blocks, us] : c_alone) bytes[blocks] = bytes_for(cost, blocks, us);
  nlohmann::json records = nlohmann::json::array();
  int totals = 0, totals_within = 0, ratios = 0, ratios_within = 0;
  bool pinned_ok = true;
  std::map<std::tuple<std::string, int, int>, std::map<int, std::pair<double, double>>> by_cdmc;
  for (const row& r : rows) {
    const double simulated = simulate(cost, r.pattern, r.cdmc, r.priority, r.blocks, bytes.at(r.blocks));
    const bool within = std::abs(simulated / r.measured_us - 1) <= 0.10;
    ++totals;
    totals_within += within;
    pinned_ok = pinned_ok && std::abs(simulated / r.measured_us - 1) <= 0.15;
    by_cdmc[{r.pattern, r.priority, r.blocks}][r.cdmc] = {r.measured_us, simulated};
    records.push_back({{"pattern", r.pattern},
                       {"cdmc", r.cdmc},
                       {"priority", r.priority},
                       {"blocks", r.blocks},
                       {"measured_us", r.measured_us},
                       {"simulated_us", std::round(simulated * 10) / 10},
                       {"ratio", std::round(simulated / r.measured_us * 1000) / 1000},
                       {"within_10pct", within}});
  }
  for (const auto& [key, at] : by_cdmc) {
    if (!at.contains(1)) continue;
    for (const int cdmc : {8, 32}) {
      if (!at.contains(cdmc)) continue;
      const double measured = at.at(cdmc).first / at.at(1).first, simulated = at.at(cdmc).second / at.at(1).second;
      const bool within = std::abs(simulated - measured) <= 0.1;
      ++ratios;
      ratios_within += within;
      pinned_ok = pinned_ok && std::abs(simulated - measured) <= 0.2;
      records.push_back({{"pattern", std::get<0>(key)},
                         {"priority", std::get<1>(key)},
                         {"blocks", std::get<2>(key)},
                         {"cdmc_ratio", std::to_string(cdmc) + "/1"},
                         {"measured", std::round(measured * 1000) / 1000},
                         {"simulated", std::round(simulated * 1000) / 1000},
                         {"within_0.1", within}});
    }
  }
  const nlohmann::json out{
      {"records", records},
      {"c_alone_us", c_alone},
      {"c_bytes", bytes},
      {"within", {{"totals", totals_within}, {"of_totals", totals}, {"ratios", ratios_within}, {"of_ratios", ratios}}},
      {"pinned", "totals within 15 %, ratios within 0.2"},
      {"in_band", pinned_ok}};
  std::printf("%s\n", out.dump(1).c_str());
  return pinned_ok ? 0 : 1;
}
