// Bitwise equality of simulation results, for the tests that hold two ways of simulating one
// step to the same answer (classes against the full step, fast paths on and off).
#pragma once

#include <cstddef>

#include <overlap/sim/result.hpp>

inline bool same_interval(const overlap::sim::interval& a, const overlap::sim::interval& b) {
  return a.rank == b.rank && a.stream == b.stream && a.op == b.op && a.start_us == b.start_us && a.end_us == b.end_us;
}

/// Equal bit for bit: every time, every interval (transfer part included), the wait-for graph.
inline bool identical(const overlap::sim::result& a, const overlap::sim::result& b) {
  if (a.step_time_us != b.step_time_us || a.compute_us != b.compute_us || a.deadlock != b.deadlock ||
      a.exposed_comm_us != b.exposed_comm_us || a.comm_us != b.comm_us || a.wait_for_graph != b.wait_for_graph ||
      a.intervals.size() != b.intervals.size())
    return false;
  for (std::size_t i = 0; i < a.intervals.size(); ++i)
    if (!same_interval(a.intervals[i], b.intervals[i]) || a.intervals[i].transfer_us != b.intervals[i].transfer_us)
      return false;
  return true;
}
