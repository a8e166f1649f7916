#pragma once
// The program both sides of the host-overhead bench issue: rank 0 of a generated TP x DP step
// (tp 4 with userbuffer overlap, dp 2 with overlapped reductions and parameter gathers; 8 layers,
// 4 micro-batches: about 4,000 ops of every kind but host sync), and the shapes of its
// communicators as the null backend reports them.
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>

#include "null_api.hpp"

namespace bench {

inline overlap::schedule::program bench_program() {
  namespace ov = overlap;
  overlap::schedule::workload w;
  w.num_layers = 8;
  w.micro_batches = 4;
  using cfg = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::dp<2>,
                         ov::overlap_grad_reduce<>, ov::overlap_param_gather<>, ov::distributed_optimizer<>>;
  return overlap::schedule::compose_step(cfg::settings, cfg::resolved, w,
                                         {.tp = true, .dp = true, .pp = false, .ep = false})
      .front();
}

/// One null communicator per program communicator, with its size and this rank's position.
inline std::vector<comm_shape> comm_shapes(const overlap::schedule::program& p) {
  std::vector<comm_shape> shapes;
  for (const auto& c : p.comms) {
    comm_shape s{static_cast<int>(c.ranks.size()), 0};
    for (std::size_t i = 0; i < c.ranks.size(); ++i)
      if (c.ranks[i] == p.rank) s.rank = static_cast<int>(i);
    shapes.push_back(s);
  }
  return shapes;
}

/// Bytes per element of the bench's buffers (bf16).
constexpr int element_bytes = 2;

}  // namespace bench
