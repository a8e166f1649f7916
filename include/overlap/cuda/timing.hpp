#pragma once
/// @file
/// What the executor's timing mode (`basic_executor::run_timed`) measures: the GPU time of every
/// compute and communication op of one rank's program, from a pair of timing events recorded
/// around it on its stream. `us_per_op()` is what `sim::write_measured_costs` takes. Host only.
///
/// An interval is the op's time on its stream: a kernel sharing the SMs with a concurrent
/// communication kernel is timed slower, and a collective or a send/recv includes the wait for
/// its peers to reach it (time a serialized program, or the ops alone, for costs without either).

#include <algorithm>
#include <cstddef>
#include <vector>

#include <overlap/program/op_key.hpp>

namespace overlap::cuda {

/// One op's measured time.
struct op_time {
  /// The op's index in `program::ops`.
  int op = -1;
  schedule::op_key key{};
  schedule::op_kind kind = schedule::op_kind::compute;
  /// The median over the timed steps, in microseconds.
  double us = 0;
  /// One time per timed step, in step order (for a mean or a spread of your own).
  std::vector<double> samples_us{};
  /// How many ops the measured interval covered: 1, or the compute and communication ops of one
  /// NCCL group (NCCL launches a group's work together at `ncclGroupEnd`, so its ops cannot be
  /// told apart; each has the whole group's time).
  int interval_ops = 1;
};

/// What `run_timed` gives: one entry per compute and communication op, in program order.
struct step_timing {
  /// How many steps were timed.
  int steps = 0;
  /// `program::ops.size()`.
  std::size_t num_ops = 0;
  std::vector<op_time> ops{};

  /// One time per program op, in program order: an op's median, 0 for the ops that take no time
  /// of their own (records, waits, host syncs).
  std::vector<double> us_per_op() const {
    std::vector<double> us(num_ops, 0.0);
    for (const op_time& t : ops) us[static_cast<std::size_t>(t.op)] = t.us;
    return us;
  }
};

namespace detail {

/// The median of `samples` (the mean of the middle two for an even count; 0 for none).
inline double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const std::size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid), samples.end());
  const double upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  const double lower = *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

}  // namespace detail

}  // namespace overlap::cuda
