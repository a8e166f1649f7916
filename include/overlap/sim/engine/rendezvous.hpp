#pragma once
/// @file
/// The rendezvous of the event loop (see simulator.hpp): each communication group (a collective's
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
      : c_(c), matched_(matched), expected_(matched.groups.size(), 0), launched_(matched.groups.size(), 0),
        where_(matched.groups.size()), links_(c.programs.size(), matched.groups.size(), c.timers, c.group_timers) {
    const std::size_t groups = matched.groups.size();
    // Unmatched ops keep group -1 and never complete; so does a group with a missing member.
    for (std::size_t g = 0; g < groups; ++g)
      for (const auto& member : matched.groups[g]) c.ranks[member.program].ops[member.op].group = static_cast<std::int32_t>(g);
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
      expected_[g] = o.kind == schedule::op_kind::collective && classes
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

  /// A member of group g launched at `t`; the last one starts its transfer.
  void launch(std::size_t g, double t) {
    const auto& members = matched_.groups[g];
    if (static_cast<int>(members.size()) != expected_[g] || !matched_.disagreement[g].empty()) return;
    if (++launched_[g] < expected_[g]) return;
    const auto& first = members.front();
    const schedule::op& o = c_.programs[first.program].ops[first.op];
    const double us = c_.checked(c_.cost.comm_us(o, where_[g]), first.program, first.op);
    const double latency = std::min(us, c_.checked(c_.cost.comm_latency_us(o, where_[g]), first.program, first.op));
    for (const auto& mem : members) {
      c_.ranks[mem.program].ops[mem.op].now = state::running;
      c_.ranks[mem.program].ops[mem.op].start = t;
    }
    links_.start(g, t, latency, us - latency);
  }
  /// Group g's members: what its transfer's end makes due.
  std::span<const schedule::op_ref> members(std::size_t g) const { return matched_.groups[g]; }
  /// Why group g never starts, if its members disagree.
  const std::string& disagreement(std::size_t g) const { return matched_.disagreement[g]; }
  link_model& links() { return links_; }
  const link_model& links() const { return links_; }

 private:
  step_context& c_;
  const schedule::rendezvous_set& matched_;
  std::vector<int> expected_, launched_;  ///< per group: members to launch, and launched
  std::vector<placement> where_;
  link_model links_;
};

}  // namespace overlap::sim::detail
