#pragma once
/// @file
/// The cost interface: how long an op takes, as the simulator asks it. `analytic.hpp` holds the
/// model the presets and profiles drive (`analytic_cost_model`) and the base for a model that
/// adjusts some of its answers (`adjusted_cost_model`); `measured_cost.hpp` one such, with times
/// measured per op.

#include <bit>
#include <cstdint>

#include <overlap/program/program.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace overlap::sim {

/// Where a rendezvous' members sit: how many there are, and the most peers on other nodes any
/// member has (0: all inside one node).
struct placement {
  int ranks = 2;
  int off_node_peers = 0;
  bool crosses_nodes() const { return off_node_peers > 0; }
};

/// What a model whose compute time reads only these of an op (`compute_reads_inputs_only`) reads:
/// two ops with equal inputs take equal times on equal SMs, so the simulator, asking for many ops
/// (every layer's and micro-batch's GEMMs are alike), asks once per inputs.
struct compute_inputs {
  schedule::op_type type = schedule::op_type::none;
  schedule::gemm_format format = schedule::gemm_format::native;
  std::int64_t m = 0, n = 0, k = 0, groups = 1, memory_bytes = 0;
  std::uint64_t flops = 0;  ///< its bits: equal inputs give bit-equal times
  friend constexpr bool operator==(const compute_inputs&, const compute_inputs&) = default;

  static compute_inputs of(const schedule::op& o) {
    return {o.key.type, o.format,      o.gemm.m,       o.gemm.n,
            o.gemm.k,   o.gemm.groups, o.memory_bytes, std::bit_cast<std::uint64_t>(o.flops)};
  }
};

class cost_model {
 public:
  virtual ~cost_model() = default;

  /// The machine the times are of.
  virtual const sim::machine& machine() const = 0;
  /// A compute op running on `sms` of the GPU's SMs.
  virtual double compute_us(const schedule::op& o, int sms) const = 0;
  /// One wave of a GEMM's tiles on `sms` SMs (0: the op does not run in waves): how long its
  /// blocks hold the SMs before another kernel can get them.
  virtual double wave_us(const schedule::op& o, int sms) const = 0;
  /// A collective or p2p op after every member of its rendezvous has launched it.
  virtual double comm_us(const schedule::op& o, const placement& where) const = 0;
  /// The part of `comm_us` that is latency (per message or ring step), not bandwidth: a
  /// transfer's links are shared only by the rest (at most `comm_us`).
  virtual double comm_latency_us(const schedule::op& o, const placement& where) const = 0;

  /// Whether `compute_us` reads `compute_inputs` alone (then the simulator may keep one time per
  /// inputs); a model that reads more of an op (its key) keeps the default, false.
  virtual bool compute_reads_inputs_only() const { return false; }
  /// `compute_us(o, sms)` for an op whose time on the whole GPU, `whole_us`, the model gave
  /// before: the simulator, which keeps that time per op, asks this for every kernel that starts
  /// beside communication, and a model may answer it without working the time out again.
  virtual double stretched_us(const schedule::op& o, int sms, [[maybe_unused]] double whole_us) const {
    return compute_us(o, sms);
  }

  /// `comm_us` among `ranks` ranks, every peer off the node when `crosses_nodes`.
  double comm_us(const schedule::op& o, int ranks, bool crosses_nodes) const {
    return comm_us(o, placement{ranks, crosses_nodes ? ranks - 1 : 0});
  }
};

}  // namespace overlap::sim
