#pragma once
/// @file
/// How long an op takes. The analytic default derives compute time from flops and bytes over the
/// machine's peaks and communication time from the usual ring / all-to-all / p2p formulas; a user
/// replaces it (for example with measured per-op times) by deriving from `cost_model`.

#include <algorithm>
#include <utility>

#include <overlap/program/program.hpp>
#include <overlap/sim/machine.hpp>

namespace overlap::sim {

class cost_model {
 public:
  explicit cost_model(sim::machine m) : machine_(std::move(m)) {}
  virtual ~cost_model() = default;

  const sim::machine& machine() const { return machine_; }

  /// A compute op running on `sms` of the GPU's SMs.
  virtual double compute_us(const schedule::op& o, int sms) const {
    const double share = static_cast<double>(sms) / machine_.sms;
    const double math = o.flops / (machine_.peak_flops_per_us * share);
    const double memory = static_cast<double>(o.memory_bytes) / machine_.memory_bytes_per_us;
    return std::max(math, memory);
  }

  /// A collective or p2p op among `ranks` ranks, after every member has launched it.
  virtual double comm_us(const schedule::op& o, int ranks, bool crosses_nodes) const {
    const double bw = crosses_nodes ? machine_.network_bytes_per_us : machine_.nvlink_bytes_per_us;
    const double alpha = crosses_nodes ? machine_.network_latency_us : machine_.nvlink_latency_us;
    const double bytes = static_cast<double>(o.bytes);
    const double p = ranks;
    if (o.kind != schedule::op_kind::collective) return bytes / bw + alpha;
    switch (o.coll) {
      case schedule::collective::all_gather:
      case schedule::collective::reduce_scatter:
      case schedule::collective::all_to_all:
        return (p - 1) / p * bytes / bw + (p - 1) * alpha;
      case schedule::collective::all_reduce:
        return 2 * (p - 1) / p * bytes / bw + 2 * (p - 1) * alpha;
    }
    return 0;
  }

 private:
  sim::machine machine_;
};

}  // namespace overlap::sim
