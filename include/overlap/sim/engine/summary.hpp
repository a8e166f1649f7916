#pragma once
/// @file
/// The summary of a simulation (see sim/simulate.hpp): each op's interval, the step time, compute and
/// communication time and the communication no compute covers, per rank and family (the maximum
/// over ranks), and on a hang the wait-for graph: one line per op left, what it waits for.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <overlap/program/semantics.hpp>
#include <overlap/sim/engine/rendezvous.hpp>
#include <overlap/sim/engine/state.hpp>
#include <overlap/sim/result.hpp>

namespace overlap::sim::detail {

/// Sorts intervals ((start, end) pairs) and merges overlapping ones, dropping empty ones.
inline void merge(std::vector<std::pair<double, double>>& v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  std::size_t n = 0;
  for (const auto& x : v) {
    if (x.second <= x.first) continue;
    if (n > 0 && x.first <= v[n - 1].second)
      v[n - 1].second = std::max(v[n - 1].second, x.second);
    else
      v[n++] = x;
  }
  v.resize(n);
}

/// Adds interval [s, e) to `v`, to be merged: into its last interval when it starts inside it or
/// where it ends, as `merge` would join them (intervals that come in start order, as one stream's
/// ops do, then stay few); empty ones are dropped, and any out of order left to `merge`.
inline void add_interval(std::vector<std::pair<double, double>>& v, double s, double e) {
  if (e <= s) return;
  if (!v.empty() && v.back().first <= s && s <= v.back().second)
    v.back().second = std::max(v.back().second, e);
  else
    v.emplace_back(s, e);
}

/// Length of `a` outside `b`, both merged (see `merge`).
inline double uncovered(const std::vector<std::pair<double, double>>& a,
                        const std::vector<std::pair<double, double>>& b) {
  double total = 0;
  std::size_t j = 0;
  for (const auto& [s, e] : a) {
    double covered = 0;
    while (j < b.size() && b[j].second <= s) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < e; ++k)
      covered += std::min(e, b[k].second) - std::max(s, b[k].first);
    total += (e - s) - covered;
  }
  return total;
}

inline double length(const std::vector<std::pair<double, double>>& merged) {
  double total = 0;
  for (const auto& [s, e] : merged) total += e - s;
  return total;
}

/// Why op i of rank `p` (state `rs`) never finished: one line of the wait-for graph.
inline std::string blocked_line(const schedule::program& p, const rank_state& rs, std::size_t i,
                                const rendezvous& groups, std::optional<schedule::rank_order>& order) {
  const schedule::op& o = p.ops[i];
  const std::string where =
      "rank " + std::to_string(p.rank) + " op " + std::to_string(i) + " (" + schedule::display_name(o) + ")";
  if (!order) order.emplace(p);
  long blocker = -1;
  for (const std::size_t j : order->predecessors(i))
    if (rs.ops[j].now != state::done) {
      blocker = static_cast<long>(j);
      break;
    }
  const long g = rs.ops[i].group;
  std::string why;
  if (rs.ops[i].kind == schedule::op_kind::host_sync)
    why = o.event < 0 ? "the host waits for earlier ops" : "the host waits for event " + std::to_string(o.event);
  else if (rs.ops[i].now == state::pending)
    why = "not issued: the host is blocked at a host sync";
  else if (rs.ops[i].now == state::launched)
    why = g < 0 ? "launched; no rank issues its matching op"
          : !groups.disagreement(static_cast<std::size_t>(g)).empty()
              ? "launched; its rendezvous never starts: " + groups.disagreement(static_cast<std::size_t>(g))
              : "launched; waits for the other members of its rendezvous to launch";
  else if (blocker >= 0)
    why = "waits for op " + std::to_string(blocker) + " (" +
          schedule::display_name(p.ops[static_cast<std::size_t>(blocker)]) + ")";
  else
    why = "waits behind the head of its hardware queue";
  return where + ": " + why;
}

/// The result of the simulation of `programs` whose loop left `ranks` and `groups` as they are;
/// `intervals`: record each op's (options::intervals).
inline result summarize(const std::vector<schedule::program>& programs, const std::vector<rank_state>& ranks,
                        const rendezvous& groups, std::size_t total_ops, bool intervals) {
  using schedule::op_kind;
  result out;
  if (intervals) reserve_large(out.intervals, total_ops);
  std::vector<std::string> blocked;
  std::vector<std::pair<double, double>> compute;  // one rank's at a time
  schedule::per_family_array<std::vector<std::pair<double, double>>> comm;
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const schedule::program& p = programs[pi];
    const rank_state& rs = ranks[pi];
    compute.clear();
    for (auto& c : comm) c.clear();
    std::optional<schedule::rank_order> order;  // for the wait-for graph only
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const op_kind kind = rs.ops[i].kind;
      if (rs.ops[i].now != state::done) {
        out.deadlock = true;
        blocked.push_back(blocked_line(p, rs, i, groups, order));
        continue;
      }
      if (kind == op_kind::host_sync) continue;
      if (intervals) {
        const long g = rs.ops[i].group;
        out.intervals.push_back({p.rank, rs.ops[i].stream, static_cast<int>(i), rs.ops[i].start, rs.ops[i].end,
                                 g >= 0 ? groups.links().work_of(static_cast<std::size_t>(g)) : 0});
      }
      out.step_time_us = std::max(out.step_time_us, rs.ops[i].end);
      if (kind == op_kind::compute) add_interval(compute, rs.ops[i].start, rs.ops[i].end);
      if (schedule::is_communication(kind))
        add_interval(comm[static_cast<std::size_t>(rs.ops[i].family)], rs.ops[i].start, rs.ops[i].end);
    }
    merge(compute);
    out.compute_us = std::max(out.compute_us, length(compute));
    for (std::size_t f = 0; f < comm.size(); ++f) {
      merge(comm[f]);
      out.comm_us[f] = std::max(out.comm_us[f], length(comm[f]));
      out.exposed_comm_us[f] = std::max(out.exposed_comm_us[f], uncovered(comm[f], compute));
    }
  }
  for (const auto& line : blocked) out.wait_for_graph += line + "\n";
  return out;
}

}  // namespace overlap::sim::detail
