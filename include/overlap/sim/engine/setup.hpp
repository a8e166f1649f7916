#pragma once
/// @file
/// The set-up of a simulation (see sim/simulate.hpp): the hardware queues it runs with, the checks
/// of the machine, and each rank's state built from its program in one pass over its ops.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/semantics.hpp>
#include <overlap/sim/cost/cost_model.hpp>
#include <overlap/sim/engine/state.hpp>

namespace overlap::sim::detail {

/// The hardware queues of a simulation: the caller's, else the one the programs state (they must
/// agree), else CUDA's default of 8.
/// `requested`: options::cuda_device_max_connections.
inline int connections_of(const std::vector<schedule::program>& programs, int requested) {
  if (requested < 0)
    throw std::invalid_argument("simulate: options::cuda_device_max_connections is " + std::to_string(requested) +
                                "; give 1 or more, or 0 for the "
                                "programs' own");
  if (requested > 0) return requested;
  int stated = 0;
  for (const schedule::program& p : programs) {
    if (p.cuda_device_max_connections < 0)
      throw std::invalid_argument("simulate: rank " + std::to_string(p.rank) + " states cuda_device_max_connections " +
                                  std::to_string(p.cuda_device_max_connections) + "; 1 or more, or 0 for none");
    if (p.cuda_device_max_connections == 0) continue;
    if (stated != 0 && stated != p.cuda_device_max_connections)
      throw std::invalid_argument("simulate: the programs state different CUDA_DEVICE_MAX_CONNECTIONS (" +
                                  std::to_string(stated) + " and " + std::to_string(p.cuda_device_max_connections) +
                                  " on rank " + std::to_string(p.rank) +
                                  "); the model has one for the step: pass "
                                  "options::cuda_device_max_connections");
    stated = p.cuda_device_max_connections;
  }
  return stated > 0 ? stated : 8;
}

/// What the event loop itself reads of the machine (the cost model reads the rest), and its
/// clocks, which scale every compute cost.
inline void check_machine(const machine& m) {
  if (m.sms < 1 || m.comm_sms < 0 || m.p2p_sms < 0 || !std::isfinite(m.launch_us) || m.launch_us < 0 ||
      !std::isfinite(m.event_us) || m.event_us < 0)
    throw std::invalid_argument(
        "simulate: the machine needs sms >= 1, comm_sms and p2p_sms >= 0 and a finite "
        "launch_us and event_us >= 0 (it has sms " +
        std::to_string(m.sms) + ", comm_sms " + std::to_string(m.comm_sms) + ", p2p_sms " + std::to_string(m.p2p_sms) +
        ", launch_us " + std::to_string(m.launch_us) + ", event_us " + std::to_string(m.event_us) + ")");
  const auto share = [](double x) { return std::isfinite(x) && x >= 0; };
  if (!share(m.comm_interference) || !share(m.compute_interference))
    throw std::invalid_argument(
        "simulate: the machine's comm_interference and compute_interference must be finite "
        "and >= 0, 0 for none (it has " +
        std::to_string(m.comm_interference) + " and " + std::to_string(m.compute_interference) + ")");
  const auto clock = [](double mhz) { return std::isfinite(mhz) && mhz >= 0; };
  if (!clock(m.benchmark_clock_mhz) || !clock(m.sustained_clock_mhz))
    throw std::invalid_argument(
        "simulate: the machine's benchmark_clock_mhz and sustained_clock_mhz must be finite "
        "and >= 0, 0 for none (it has " +
        std::to_string(m.benchmark_clock_mhz) + " and " + std::to_string(m.sustained_clock_mhz) + ")");
}

/// Compute ops' times on the whole GPU (`cost_model::compute_us` on all its SMs), as the set-up asks
/// for every op: under the analytic model, which reads only an op's `compute_inputs`, ops of one
/// shape (every layer's and micro-batch's GEMMs) are asked once, through a small direct-mapped
/// table; a derived model is asked for every op.
class whole_gpu_times {
 public:
  explicit whole_gpu_times(const cost_model& cost) : cost_(cost), reuse_(cost.compute_reads_inputs_only()) {}
  double of(const schedule::op& o) {
    if (!reuse_) return cost_.compute_us(o, cost_.machine().sms);
    const compute_inputs in = compute_inputs::of(o);
    const auto mix = [](std::uint64_t h, auto x) {
      return (h ^ static_cast<std::uint64_t>(x)) * 0x9e3779b97f4a7c15ull;
    };
    const std::uint64_t h =
        mix(mix(mix(mix(mix(static_cast<std::uint64_t>(in.type), in.m), in.n), in.k), in.memory_bytes), in.flops);
    entry& e = table_[h >> 56];
    if (!e.known || !(e.in == in)) e = {in, cost_.compute_us(o, cost_.machine().sms), true};
    return e.us;
  }

 private:
  struct entry {
    compute_inputs in;
    double us = 0;
    bool known = false;
  };
  const cost_model& cost_;
  bool reuse_;
  std::array<entry, 256> table_{};
};

/// Builds `rs` for program `p` with `queues` hardware queues in one pass over its ops, which checks
/// them (`structure_check`: throws std::invalid_argument with the first problem), orders them
/// (`rank_order`) and writes the loop's record of each: its kind, queue and time on the whole GPU,
/// its predecessor count and successor list. The records are appended to `all` (whose `ops` and
/// `queue_ops` must have room for p's ops: the rank's spans point into them), its communication
/// ops to `communication`. `starts` and `to` are scratch (each op's successors), which the ranks
/// share.
inline void build_rank(rank_state& rs, const schedule::program& p, std::size_t queues, int sms, whole_gpu_times& times,
                       op_arrays& all, std::vector<std::uint32_t>& communication, std::vector<std::uint32_t>& starts,
                       std::vector<std::uint32_t>& to) {
  const std::size_t n = p.ops.size();
  if (n >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("simulate: rank " + std::to_string(p.rank) + " has " + std::to_string(n) +
                            " ops; the event loop indexes them in 32 bits");
  if (queues > std::numeric_limits<std::uint16_t>::max())
    throw std::length_error("simulate: rank " + std::to_string(p.rank) + " maps its streams onto " +
                            std::to_string(queues) + " hardware queues; the event loop indexes at most 65535");
  rs.queues.assign(queues, {});
  schedule::structure_check check(p);
  const auto reject = [&] {
    const schedule::structure_problem& first = check.problems().front();
    throw std::invalid_argument("simulate: rank " + std::to_string(p.rank) + " op " + std::to_string(first.op) + ": " +
                                first.text + " (verify::verify lists every problem)");
  };
  if (!check.problems().empty()) reject();
  const std::size_t first = all.ops.size();
  const schedule::rank_order order(p, [&](std::size_t i) {
    if (!check.accepts(i)) reject();
    const schedule::op& o = p.ops[i];
    op_state& s = all.ops.emplace_back();
    s.kind = o.kind;
    s.stream = o.stream;
    s.family = o.family();
    if (o.kind == schedule::op_kind::compute) s.whole_us = times.of(o);
    if (schedule::is_communication(o.kind)) communication.push_back(static_cast<std::uint32_t>(i));
    if (o.kind != schedule::op_kind::host_sync) {
      s.queue = static_cast<std::uint16_t>(static_cast<std::size_t>(o.stream) % queues);
      ++rs.queues[s.queue].end;  // its size, for now
    }
  });
  rs.ops = std::span<op_state>(all.ops).subspan(first, n);
  order.successors(starts, to);
  const std::size_t base = all.succ.size();
  if (base + to.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("simulate: the step has " + std::to_string(base + to.size()) +
                            " predecessor links; the event loop indexes them in 32 bits");
  all.succ.insert(all.succ.end(), to.begin(), to.end());
  for (std::size_t i = 0; i < n; ++i) {
    op_state& s = rs.ops[i];
    s.waiting = static_cast<std::uint32_t>(order.predecessors(i).size());
    s.succ_begin = static_cast<std::uint32_t>(base + starts[i]);
    s.succ_end = static_cast<std::uint32_t>(base + starts[i + 1]);
  }
  std::uint32_t at = 0;
  for (hardware_queue& q : rs.queues) {
    q.next = at;
    at += q.end;
    q.end = q.next;  // filled below
  }
  const std::size_t queued = all.queue_ops.size();
  all.queue_ops.resize(queued + at);
  rs.queue_ops = std::span<std::uint32_t>(all.queue_ops).subspan(queued, at);
  for (std::size_t i = 0; i < n; ++i)
    if (rs.ops[i].kind != schedule::op_kind::host_sync)
      rs.queue_ops[rs.queues[rs.ops[i].queue].end++] = static_cast<std::uint32_t>(i);
  rs.free_sms = sms;
  rs.fixed_order = p.streams.size() <= queues;
  if (rs.fixed_order) {  // queue q holds stream q
    for (std::size_t q = 0; q < queues; ++q) rs.queue_order.push_back(q);
    std::stable_sort(rs.queue_order.begin(), rs.queue_order.end(), [&](std::size_t a, std::size_t b) {
      return a < p.streams.size() && b < p.streams.size() && p.streams[a].priority < p.streams[b].priority;
    });
  }
}

}  // namespace overlap::sim::detail
