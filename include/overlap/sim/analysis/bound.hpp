#pragma once
/// @file
/// A lower bound on a step's time, per rank the largest of: the compute it needs on the whole
/// GPU, the time its transfers keep each link busy (NVLink inside a node and the network across
/// nodes, each per direction: a send loads the outgoing one, a receive the incoming one, a ring
/// collective both), and the critical path (the step simulated without contention for SMs: the
/// dependencies, the order `cuda_device_max_connections` hardware queues impose and the host's
/// issue cost). No run of the same programs on the same machine model can be faster; a
/// simulated step time over the bound says how much SM contention and serialization cost.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/semantics.hpp>
#include <overlap/sim/cost/cost_model.hpp>
#include <overlap/sim/simulate.hpp>

namespace overlap::sim {

struct step_bound {
  double compute_us = 0;        ///< max over ranks
  double nvlink_us = 0;         ///< max over ranks
  double network_us = 0;        ///< max over ranks
  double critical_path_us = 0;  ///< the step without contention
  double value() const { return std::max({compute_us, nvlink_us, network_us, critical_path_us}); }
};

/// Throws what `simulate` throws (malformed steps, bad costs). With `opt.classes`, `programs` are
/// class representatives (as `simulate` takes them) and the bound is the full step's: an absent
/// rank's compute and links are its representative's.
inline step_bound lower_bound(const std::vector<schedule::program>& programs, const cost_model& cost,
                              options opt = {}) {
  step_bound b;
  const machine& m = cost.machine();
  opt.unlimited_resources = true;
  const result ideal = simulate(programs, cost, opt);
  b.critical_path_us = ideal.step_time_us;
  // Per program: busy time of [nvlink out, nvlink in, network out, network in].
  std::vector<std::array<double, 4>> busy(programs.size(), std::array<double, 4>{});
  std::map<int, std::size_t> index_of_rank;  // interval rank -> program index (ranks are distinct)
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    index_of_rank[programs[pi].rank] = pi;
    double compute = 0;
    for (std::size_t i = 0; i < programs[pi].ops.size(); ++i) {
      const schedule::op& o = programs[pi].ops[i];
      if (o.kind != schedule::op_kind::compute) continue;
      const double us = cost.compute_us(o, m.sms);
      if (!std::isfinite(us) || us < 0)  // an op the deadlocked simulation never reached
        throw std::invalid_argument("lower_bound: the cost model gives rank " + std::to_string(programs[pi].rank) +
                                    " op " + std::to_string(i) + " (" + schedule::display_name(o) + ") " +
                                    std::to_string(us) + " us; a cost must be finite and >= 0");
      compute += us;
    }
    b.compute_us = std::max(b.compute_us, compute);
  }
  for (const interval& i : ideal.intervals) {
    const std::size_t pi = index_of_rank.at(i.rank);
    const schedule::program& p = programs[pi];
    const schedule::op& o = p.ops[static_cast<std::size_t>(i.op)];
    if (!schedule::is_communication(o.kind)) continue;
    // Latency does not load a link.
    detail::for_each_link(p, o, m.gpus_per_node, [&](std::size_t l) { busy[pi][l] += i.transfer_us; });
  }
  for (const auto& x : busy) {
    b.nvlink_us = std::max({b.nvlink_us, x[0], x[1]});
    b.network_us = std::max({b.network_us, x[2], x[3]});
  }
  return b;
}

}  // namespace overlap::sim
