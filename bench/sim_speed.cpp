// Simulator speed: simulated ops per second for growing layers x micro-batches x ranks (the DP
// family's steps, dp 8 to 64). Prints {"records":[...]} on stdout.
#include <chrono>
#include <cstdio>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulator.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

int main() {
  const ov::sim::cost_model h100(ov::sim::h100_node());
  std::printf("{\"records\":[");
  bool first = true;
  for (const int scale : {1, 2, 4, 8}) {
    sc::workload w{.num_layers = 8 * scale, .micro_batches = 4 * scale};
    ov::settings s;
    s.data_parallel_size = 8 * scale;
    s.overlap_grad_reduce = true;
    const auto step = sc::data_parallel_step(s, ov::derive(s), w);
    std::size_t ops = 0;
    for (const auto& p : step) ops += p.ops.size();
    const auto start = std::chrono::steady_clock::now();
    const auto r = ov::sim::simulate(step, h100);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s{\"layers\":%d,\"micro_batches\":%d,\"ranks\":%zu,\"ops\":%zu,\"seconds\":%.6f,"
                "\"ops_per_second\":%.0f,\"deadlock\":%s}",
                first ? "" : ",", w.num_layers, w.micro_batches, step.size(), ops, seconds, ops / seconds,
                r.deadlock ? "true" : "false");
    first = false;
  }
  std::printf("]}\n");
}
