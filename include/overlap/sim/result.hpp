#pragma once
/// @file
/// What a simulation of one step gives: when each op ran, the predicted step time, the exposed
/// communication per family, and on a hang the wait-for graph.

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <overlap/program/program.hpp>

namespace overlap::sim {

/// One op's execution on the GPU of `rank` (times in microseconds from the step's start).
struct interval {
  int rank = 0;
  int stream = 0;
  int op = 0;  ///< index into that rank's program::ops
  double start_us = 0;
  double end_us = 0;
  /// Communication: the part of its time that loads its links, at their full rate (its time
  /// less the latency part; see `cost_model::comm_latency_us`).
  double transfer_us = 0;
};

/// Indexed by schedule::family.
using per_family = schedule::per_family_array<double>;

struct result {
  double step_time_us = 0;          ///< the latest completion over all ranks
  std::vector<interval> intervals;  ///< every GPU op that ran (record/wait included, zero length)
  per_family exposed_comm_us{};     ///< max over ranks of comm time with no concurrent compute
  per_family comm_us{};             ///< max over ranks of the union of comm intervals
  double compute_us = 0;            ///< max over ranks of the union of compute intervals
  bool deadlock = false;
  std::string wait_for_graph;  ///< on deadlock: one line per blocked op, what it waits for
};

}  // namespace overlap::sim
