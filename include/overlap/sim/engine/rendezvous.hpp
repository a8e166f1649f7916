#pragma once
/// @file
/// The rendezvous of the event loop (see sim/simulate.hpp): each communication group (a collective's
/// members, a send and its receive) starts its transfer once every member has launched its
/// kernel; the transfer then runs on the link model.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/program/rank_classes.hpp>
#include <overlap/program/rendezvous.hpp>
#include <overlap/sim/engine/links.hpp>
#include <overlap/sim/engine/state.hpp>

namespace overlap::sim::detail {

class rendezvous {
 public:
  /// The groups of `matched`, whose members' ops get their group ids. With `classes`, a group
  /// starts once its present members have launched (absent members are their representatives,
  /// present members of the group). Without SM contention (`unlimited`), no transfer shares links.
  rendezvous(step_context& c, const schedule::rendezvous_set& matched, const schedule::rank_classes* classes,
             bool unlimited)
      : c_(c),
        matched_(matched),
        unlimited_(unlimited),
        expected_(matched.groups.size(), 0),
        launched_(matched.groups.size(), 0),
        where_(matched.groups.size()),
        links_(c.programs.size(), matched.groups.size(), c.timers, c.group_timers,
               !unlimited && c.m.compute_interference > 0,
               c.m.nvlink_bytes_per_us > 0 ? c.m.network_bytes_per_us / c.m.nvlink_bytes_per_us : 0) {
    const std::size_t groups = matched.groups.size();
    // Unmatched ops keep group -1 and never complete; so does a group with a missing member.
    for (std::size_t g = 0; g < groups; ++g)
      for (const auto& member : matched.groups[g])
        c.ranks[member.program].ops[member.op].group = static_cast<std::int32_t>(g);
    std::vector<char> present;
    if (classes) {
      present.assign(static_cast<std::size_t>(classes->world()), 0);
      for (const schedule::program& p : c.programs) present[static_cast<std::size_t>(p.rank)] = 1;
    }
    // How many peers of a communication op sit on another node; a collective's count depends on
    // its rank and communicator only, so it is worked out once per pair.
    std::vector<std::vector<int>> off_node(c.programs.size());
    for (std::size_t pi = 0; pi < c.programs.size(); ++pi) off_node[pi].assign(c.programs[pi].comms.size(), -1);
    const int gpus_per_node = c.m.gpus_per_node;
    const auto off_node_peers = [&](std::size_t pi, const schedule::op& o) {
      if (o.kind != schedule::op_kind::collective) return schedule::off_node_peers(c.programs[pi], o, gpus_per_node);
      int& known = off_node[pi][static_cast<std::size_t>(o.comm)];
      if (known < 0) known = schedule::off_node_peers(c.programs[pi], o, gpus_per_node);
      return known;
    };
    for (std::size_t g = 0; g < groups; ++g) {
      const auto& first = matched.groups[g].front();
      const schedule::op& o = c.programs[first.program].ops[first.op];
      const std::vector<int>& members = c.programs[first.program].comms[static_cast<std::size_t>(o.comm)].ranks;
      const int size = o.kind == schedule::op_kind::collective ? static_cast<int>(members.size()) : 2;
      expected_[g] =
          o.kind == schedule::op_kind::collective && classes
              ? static_cast<int>(std::count_if(members.begin(), members.end(),
                                               [&](int r) { return present[static_cast<std::size_t>(r)] != 0; }))
              : size;
      where_[g] = placement{size, 0};
      std::uint64_t order = std::numeric_limits<std::uint64_t>::max();  // its first member's place among events
      for (const auto& mem : matched.groups[g]) {
        const schedule::op& mo = c.programs[mem.program].ops[mem.op];
        const int off = off_node_peers(mem.program, mo);
        where_[g].off_node_peers = std::max(where_[g].off_node_peers, off);
        if (!unlimited) for_each_link(mo.kind, off > 0, [&](std::size_t l) { links_.add_link(mem.program, l); });
        order = std::min(order, step_context::order_of(mem.program, mem.op));
      }
      links_.close_group(order);
    }
  }

  /// A member of group g launched at `t`, its kernel placed to move `kernel` times what the
  /// machine's usual kernel moves over NVLink (see issuer::launch); the last one starts the
  /// transfer, at what the slowest member's kernel lets it move.
  void launch(std::size_t g, double t, double kernel) {
    const auto& members = matched_.groups[g];
    if (static_cast<int>(members.size()) != expected_[g] || !matched_.disagreement[g].empty()) return;
    if (kernel != 1) {
      if (kernel_.empty()) kernel_.assign(matched_.groups.size(), never);
      kernel_[g] = std::min(kernel_[g], kernel);
    }
    if (++launched_[g] < expected_[g]) return;
    const auto& first = members.front();
    const schedule::op& o = c_.programs[first.program].ops[first.op];
    const double us = c_.checked(c_.cost.comm_us(o, where_[g]), first.program, first.op);
    const double latency = std::min(us, c_.checked(c_.cost.comm_latency_us(o, where_[g]), first.program, first.op));
    for (const auto& mem : members) {
      c_.ranks[mem.program].ops[mem.op].now = state::running;
      c_.ranks[mem.program].ops[mem.op].start = t;
      c_.ranks[mem.program].capped_busy_sms = -1;  // its cap is from now: the next recap looks again
    }
    links_.start(g, t, latency, us - latency, cap_of(g));
  }

  /// Rank pi was dispatched at `t`: if the SMs its compute kernels hold changed since its
  /// transfers were last capped, those in flight move at their new cap (see `cap_of`). Once per
  /// dispatch, not per kernel: a GEMM that hands its SMs to the next at one time changes nothing.
  void recap(std::size_t pi, double t) {
    rank_state& rs = c_.ranks[pi];
    if (rs.busy_sms == rs.capped_busy_sms) return;
    rs.capped_busy_sms = rs.busy_sms;
    if (unlimited_ || c_.m.comm_interference <= 0 || rs.comm_active == 0) return;
    links_.for_each_in_flight(pi, [&](std::size_t g) { links_.recap(g, cap_of(g), t); });
  }
  /// Group g's members: what its transfer's end makes due.
  std::span<const schedule::op_ref> members(std::size_t g) const { return matched_.groups[g]; }
  /// Why group g never starts, if its members disagree.
  const std::string& disagreement(std::size_t g) const { return matched_.disagreement[g]; }
  link_model& links() { return links_; }
  const link_model& links() const { return links_; }

 private:
  /// What group g's kernels let its transfer move now, as a share of its link rate. A kernel of
  /// the machine's usual CTAs (`comm_sms`, `p2p_sms`), one to an SM, moves the NVLink rate, each
  /// CTA its share: the slowest member's kernel (its CTAs and placement: sm_pool::pack_in_tail,
  /// 1 where none launched otherwise) times the NVLink rate over the transfer's own link rate
  /// (the network's, slower, when it leaves the node), over the memory interference of the
  /// compute kernels beside its members (machine::comm_interference, in proportion to the SMs they
  /// hold of those the member's kernel leaves). At most 1: the link is the limit then.
  double cap_of(std::size_t g) const {
    if (unlimited_) return 1;
    double kernel = kernel_.empty() ? 1.0 : std::min(1e9, kernel_[g]);
    if (where_[g].off_node_peers > 0 && c_.m.network_bytes_per_us > 0) {
      const auto& first = matched_.groups[g].front();
      const bool p2p = c_.programs[first.program].ops[first.op].kind != schedule::op_kind::collective;
      const double in_node = p2p && c_.m.p2p_bytes_per_us > 0 ? c_.m.p2p_bytes_per_us : c_.m.nvlink_bytes_per_us;
      kernel *= in_node / c_.m.network_bytes_per_us;
    }
    if (kernel >= 1 && c_.m.comm_interference <= 0) return 1;
    double busiest = 0;
    for (const auto& mem : matched_.groups[g]) {
      const rank_state& rs = c_.ranks[mem.program];
      const int others = std::max(1, c_.m.sms - rs.ops[mem.op].sms);
      busiest = std::max(busiest, std::min(1.0, static_cast<double>(rs.busy_sms) / others));
    }
    return std::min(1.0, kernel / (1 + c_.m.comm_interference * busiest));
  }

  step_context& c_;
  const schedule::rendezvous_set& matched_;
  bool unlimited_;
  std::vector<int> expected_, launched_;  ///< per group: members to launch, and launched
  std::vector<placement> where_;
  /// Per group, its slowest member's kernel (see `launch`; empty: every kernel 1).
  std::vector<double> kernel_;
  link_model links_;
};

}  // namespace overlap::sim::detail
