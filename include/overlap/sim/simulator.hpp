#pragma once
/// @file
/// A discrete-event simulation of one step on a model of the machine (no GPU needed).
///
/// Per rank: a host thread issues ops in program order, paying `machine::launch_us` each, and stops
/// at a host sync until everything issued before it has finished. Streams map round-robin onto
/// `cuda_device_max_connections` hardware queues; each queue is FIFO across its streams, so an op
/// whose dependencies are not met blocks every op behind it in that queue (with one connection,
/// the head-of-line blocking TP ordering relies on). An op starts when it is at its queue's head,
/// its stream predecessor, its communicator predecessor and the record it waits for are done, and
/// SMs are free: compute takes every free SM, communication kernels take `op::sms` (by default
/// `machine::comm_sms` for collectives, `machine::p2p_sms` for send/recv; none by copy engine) from
/// a running GEMM if need be (which then runs slower until it gets them back when the kernel
/// ends) and hold them from launch; a collective or send/recv transfers only
/// once every member of its rendezvous has launched. When nothing can move while ops remain, the
/// step hangs: the result says so and gives the wait-for graph.

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include <overlap/schedule/program.hpp>
#include <overlap/schedule/rendezvous.hpp>
#include <overlap/sim/cost_model.hpp>
#include <overlap/sim/result.hpp>

namespace overlap::sim {

struct options {
  int cuda_device_max_connections = 8;
  /// No contention for SMs: every compute kernel gets the whole GPU and communication kernels
  /// none. What is left is the dependencies (hardware-queue order included) and the host's issue
  /// cost: the step time is then the critical path (see bound.hpp).
  bool unlimited_resources = false;
};

namespace detail {

inline constexpr double never = std::numeric_limits<double>::infinity();


enum class state : unsigned char { pending, issued, launched, running, done };

struct op_state {
  state now = state::pending;
  double issued_at = never;
  double start = never;  ///< compute: kernel start; comm: transfer start
  double end = never;
  int sms = 0;
  long stream_prev = -1, comm_prev = -1, record = -1;
  /// When a predecessor above is the last member of a group, the group's first member: the
  /// whole range must be done. Members of one group do not wait for each other.
  long stream_prev_first = -1, comm_prev_first = -1;
  long group = -1;  ///< rendezvous group for communication ops
};

struct rank_state {
  std::vector<op_state> ops;
  std::vector<std::vector<std::size_t>> queues;  ///< op indices per hardware queue, issue order
  std::vector<std::size_t> head;
  std::vector<std::size_t> running_compute;  ///< compute ops now running, in start order
  std::size_t next_issue = 0;
  double host_time = 0;
  int free_sms = 0;
};

/// Sorts intervals ((start, end) pairs) and merges overlapping ones, dropping empty ones.
inline void merge(std::vector<std::pair<double, double>>& v) {
  std::sort(v.begin(), v.end());
  std::size_t n = 0;
  for (const auto& x : v) {
    if (x.second <= x.first) continue;
    if (n > 0 && x.first <= v[n - 1].second) v[n - 1].second = std::max(v[n - 1].second, x.second);
    else v[n++] = x;
  }
  v.resize(n);
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

}  // namespace detail

/// Simulates one step: `programs` holds one program per rank, well-formed as `verify` checks
/// (a malformed op is not diagnosed here).
inline result simulate(const std::vector<schedule::program>& programs, const cost_model& cost,
                       const options& opt = {}) {
  using detail::never;
  using detail::state;
  using schedule::op_kind;
  const machine& m = cost.machine();
  const int connections = std::max(1, opt.cuda_device_max_connections);

  std::vector<detail::rank_state> ranks(programs.size());
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const schedule::program& p = programs[pi];
    detail::rank_state& rs = ranks[pi];
    rs.ops.resize(p.ops.size());
    rs.queues.resize(std::max<std::size_t>(1, std::min<std::size_t>(p.streams.size(), connections)));
    rs.head.assign(rs.queues.size(), 0);
    rs.free_sms = m.sms;
    std::vector<long> last_stream(p.streams.size(), -1), last_comm(p.comms.size(), -1),
        last_record(p.num_events, -1);
    // The first member of the group each op belongs to (itself when ungrouped).
    std::vector<long> first(p.ops.size());
    for (std::size_t i = 0; i < p.ops.size(); ++i)
      first[i] = i > 0 && p.ops[i].group >= 0 && p.ops[i - 1].group == p.ops[i].group
                     ? first[i - 1]
                     : static_cast<long>(i);
    // Per communicator, the predecessor a group's members on it share (taken at their first).
    std::vector<long> group_comm_prev(p.comms.size(), -1), group_comm_prev_first(p.comms.size(), -1);
    std::vector<bool> comm_in_group(p.comms.size(), false);
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const schedule::op& o = p.ops[i];
      if (o.kind == op_kind::host_sync) continue;
      detail::op_state& s = rs.ops[i];
      const bool continues = first[i] != static_cast<long>(i);
      if (!continues) comm_in_group.assign(p.comms.size(), false);
      if (continues) {  // a later member: the predecessors the group had when it started
        const detail::op_state& lead = rs.ops[static_cast<std::size_t>(first[i])];
        s.stream_prev = lead.stream_prev;
        s.stream_prev_first = lead.stream_prev_first;
      } else {
        s.stream_prev = last_stream[o.stream];
        s.stream_prev_first = s.stream_prev < 0 ? -1 : first[static_cast<std::size_t>(s.stream_prev)];
      }
      if (schedule::is_communication(o.kind)) {
        if (!comm_in_group[o.comm]) {
          group_comm_prev[o.comm] = last_comm[o.comm];
          group_comm_prev_first[o.comm] =
              last_comm[o.comm] < 0 ? -1 : first[static_cast<std::size_t>(last_comm[o.comm])];
          comm_in_group[o.comm] = o.group >= 0;
        }
        s.comm_prev = group_comm_prev[o.comm];
        s.comm_prev_first = group_comm_prev_first[o.comm];
      }
      last_stream[o.stream] = static_cast<long>(i);
      if (schedule::is_communication(o.kind)) last_comm[o.comm] = static_cast<long>(i);
      if (o.kind == op_kind::record) last_record[o.event] = static_cast<long>(i);
      if (o.kind == op_kind::wait) rs.ops[i].record = last_record[o.event];
    }
  }
  const schedule::rendezvous_set matched = schedule::match_rendezvous(programs);
  // Unmatched ops keep group -1 and never complete; so does a group with a missing member.
  for (std::size_t g = 0; g < matched.groups.size(); ++g)
    for (const auto& member : matched.groups[g])
      ranks[member.program].ops[member.op].group = static_cast<long>(g);
  std::vector<int> expected_size(matched.groups.size(), 0);
  for (std::size_t g = 0; g < matched.groups.size(); ++g) {
    const auto& first = matched.groups[g].front();
    const schedule::op& o = programs[first.program].ops[first.op];
    expected_size[g] = o.kind == op_kind::collective
                           ? static_cast<int>(programs[first.program].comms[o.comm].ranks.size())
                           : 2;
  }

  using running_entry = std::tuple<double, std::size_t, std::size_t>;
  std::priority_queue<running_entry, std::vector<running_entry>, std::greater<>> running;
  const auto done = [&](std::size_t pi, long i) {
    return i < 0 || ranks[pi].ops[static_cast<std::size_t>(i)].now == state::done;
  };
  const auto all_done = [&](std::size_t pi, long from, long to) {  // ops [from, to]
    for (long i = from < 0 ? to : from; i >= 0 && i <= to; ++i)
      if (!done(pi, i)) return false;
    return true;
  };
  const auto start_group = [&](std::size_t g, double t) {
    const auto& members = matched.groups[g];
    if (static_cast<int>(members.size()) != expected_size[g]) return false;
    for (const auto& mem : members)
      if (ranks[mem.program].ops[mem.op].now != state::launched) return false;
    const schedule::op& o = programs[members.front().program].ops[members.front().op];
    bool crosses = false;
    const int node0 = programs[members.front().program].rank / m.gpus_per_node;
    for (const auto& mem : members) crosses |= programs[mem.program].rank / m.gpus_per_node != node0;
    const double end = t + cost.comm_us(o, static_cast<int>(members.size()), crosses);
    for (const auto& mem : members) {
      auto& s = ranks[mem.program].ops[mem.op];
      s.now = state::running;
      s.start = t;
      s.end = end;
      running.emplace(end, mem.program, mem.op);
    }
    return true;
  };

  // Moves up to `count` SMs from the rank's running compute ops to its free pool.
  const auto take_sms = [&](std::size_t pi, int count, double t) {
    detail::rank_state& rs = ranks[pi];
    for (const std::size_t i : rs.running_compute) {
      if (count <= 0) break;
      detail::op_state& s = rs.ops[i];
      if (s.sms < 2) continue;
      const int taken = std::min(count, s.sms - 1);
      s.end = t + (s.end - t) * s.sms / (s.sms - taken);
      s.sms -= taken;
      rs.free_sms += taken;
      count -= taken;
      running.emplace(s.end, pi, i);  // the earlier entry is now stale and skipped
    }
  };
  // Returns free SMs to the rank's running compute ops that were slowed, which speed up again.
  const auto give_back_sms = [&](std::size_t pi, double t) {
    detail::rank_state& rs = ranks[pi];
    for (const std::size_t i : rs.running_compute) {
      if (rs.free_sms <= 0) break;
      detail::op_state& s = rs.ops[i];
      if (s.sms >= m.sms) continue;
      const int given = std::min(rs.free_sms, m.sms - s.sms);
      s.end = t + (s.end - t) * s.sms / (s.sms + given);
      s.sms += given;
      rs.free_sms -= given;
      running.emplace(s.end, pi, i);
    }
  };

  // Event loop. Only ranks that something happened to are examined: all of them at the start,
  // then a rank when one of its ops completes or the host's issue of its next queue head comes
  // due (a wake-up entry, op index `wake`, in the same queue of future times).
  constexpr std::size_t wake = std::numeric_limits<std::size_t>::max();
  std::vector<char> dirty(programs.size(), 1);
  std::vector<std::size_t> work(programs.size());
  for (std::size_t pi = 0; pi < programs.size(); ++pi) work[pi] = programs.size() - 1 - pi;
  double t = 0;
  for (;;) {
    while (!work.empty()) {
      const std::size_t pi = work.back();
      work.pop_back();
      dirty[pi] = 0;
      for (bool progressed = true; progressed;) {
        progressed = false;
        const schedule::program& p = programs[pi];
        detail::rank_state& rs = ranks[pi];
        // The host issues until a host sync whose work is not finished.
        while (rs.next_issue < p.ops.size()) {
          const std::size_t i = rs.next_issue;
          const schedule::op& o = p.ops[i];
          if (o.kind == op_kind::host_sync) {
            bool all_done = true;
            for (std::size_t j = 0; j < i && all_done; ++j)
              all_done = p.ops[j].kind == op_kind::host_sync || rs.ops[j].now == state::done;
            if (!all_done) break;
            rs.host_time = std::max(rs.host_time, t);
            rs.ops[i].now = state::done;
            rs.ops[i].start = rs.ops[i].end = rs.host_time;
          } else {
            rs.host_time += m.launch_us;
            rs.ops[i].issued_at = rs.host_time;
            rs.ops[i].now = state::issued;
            rs.queues[static_cast<std::size_t>(o.stream) % rs.queues.size()].push_back(i);
          }
          ++rs.next_issue;
          progressed = true;
        }
        // Each hardware queue dispatches its head while the head can start.
        for (std::size_t q = 0; q < rs.queues.size(); ++q) {
          while (rs.head[q] < rs.queues[q].size()) {
            const std::size_t i = rs.queues[q][rs.head[q]];
            const schedule::op& o = p.ops[i];
            detail::op_state& s = rs.ops[i];
            if (s.issued_at > t) {
              running.emplace(s.issued_at, pi, wake);
              break;
            }
            if (!all_done(pi, s.stream_prev_first, s.stream_prev) ||
                !all_done(pi, s.comm_prev_first, s.comm_prev) || !done(pi, s.record))
              break;
            if (o.kind == op_kind::record || o.kind == op_kind::wait) {
              s.now = state::done;
              s.start = s.end = t;
            } else if (opt.unlimited_resources) {
              s.sms = 0;
              if (o.kind == op_kind::compute) {
                s.now = state::running;
                s.start = t;
                s.end = t + cost.compute_us(o, m.sms);
                running.emplace(s.end, pi, i);
              } else {
                s.now = state::launched;
                if (s.group >= 0) start_group(static_cast<std::size_t>(s.group), t);
              }
            } else if (o.kind == op_kind::compute) {
              if (rs.free_sms < 1) break;
              s.sms = rs.free_sms;
              rs.free_sms = 0;
              s.now = state::running;
              s.start = t;
              s.end = t + cost.compute_us(o, s.sms);
              running.emplace(s.end, pi, i);
              rs.running_compute.push_back(i);
            } else {
              // A communication kernel gets its SMs even under a running GEMM: the GEMM's later
              // waves run on fewer SMs, so it finishes later.
              const int want =
                  o.sms >= 0 ? o.sms : std::max(1, o.kind == op_kind::collective ? m.comm_sms : m.p2p_sms);
              if (rs.free_sms < want) take_sms(pi, want - rs.free_sms, t);
              if (want > 0 && rs.free_sms < 1) break;
              s.sms = std::min(rs.free_sms, want);
              rs.free_sms -= s.sms;
              s.now = state::launched;
              if (s.group >= 0) start_group(static_cast<std::size_t>(s.group), t);
            }
            ++rs.head[q];
            progressed = true;
          }
        }
      }
    }

    if (running.empty()) break;
    t = std::get<0>(running.top());
    while (!running.empty() && std::get<0>(running.top()) <= t) {
      const auto [end, pi, i] = running.top();
      running.pop();
      const std::size_t rank_index = pi;  // clang 14 cannot capture a structured binding
      const auto touch = [&] {
        if (!dirty[rank_index]) work.push_back(rank_index);
        dirty[rank_index] = 1;
      };
      if (i == wake) {
        touch();
        continue;
      }
      auto& s = ranks[pi].ops[i];
      if (s.now != state::running || s.end != end) continue;  // stale: its SMs changed since
      s.now = state::done;
      touch();
      if (opt.unlimited_resources) continue;
      ranks[pi].free_sms += s.sms;
      if (programs[pi].ops[i].kind == op_kind::compute)
        std::erase(ranks[pi].running_compute, i);
      else
        give_back_sms(pi, t);
    }
  }

  result out;
  std::size_t total_ops = 0;
  for (const auto& p : programs) total_ops += p.ops.size();
  out.intervals.reserve(total_ops);
  std::vector<std::string> blocked;
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const schedule::program& p = programs[pi];
    const detail::rank_state& rs = ranks[pi];
    std::vector<std::pair<double, double>> compute;
    std::array<std::vector<std::pair<double, double>>, 5> comm;
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const schedule::op& o = p.ops[i];
      const detail::op_state& s = rs.ops[i];
      if (s.now != state::done) {
        const std::string where = "rank " + std::to_string(p.rank) + " op " + std::to_string(i) +
                                  (o.name.empty() ? "" : " (" + o.name + ")");
        out.deadlock = true;
        std::string why;
        if (o.kind == op_kind::host_sync) why = "the host waits for earlier ops";
        else if (s.now == state::pending) why = "not issued: the host is blocked at a host sync";
        else if (s.now == state::launched)
          why = s.group < 0 ? "launched; no rank issues its matching op"
                            : "launched; waits for the other members of its rendezvous to launch";
        else if (!done(pi, s.stream_prev)) why = "waits for op " + std::to_string(s.stream_prev) + " on its stream";
        else if (!done(pi, s.comm_prev)) why = "waits for op " + std::to_string(s.comm_prev) + " on its communicator";
        else if (!done(pi, s.record)) why = "waits for the record at op " + std::to_string(s.record);
        else why = "waits behind the head of its hardware queue";
        blocked.push_back(where + ": " + why);
        continue;
      }
      if (o.kind == op_kind::host_sync) continue;
      out.intervals.push_back({p.rank, o.stream, static_cast<int>(i), s.start, s.end});
      out.step_time_us = std::max(out.step_time_us, s.end);
      if (o.kind == op_kind::compute) compute.emplace_back(s.start, s.end);
      if (schedule::is_communication(o.kind)) comm[static_cast<std::size_t>(o.family)].emplace_back(s.start, s.end);
    }
    detail::merge(compute);
    out.compute_us = std::max(out.compute_us, detail::length(compute));
    for (std::size_t f = 0; f < comm.size(); ++f) {
      detail::merge(comm[f]);
      out.comm_us[f] = std::max(out.comm_us[f], detail::length(comm[f]));
      out.exposed_comm_us[f] = std::max(out.exposed_comm_us[f], detail::uncovered(comm[f], compute));
    }
  }
  for (const auto& line : blocked) out.wait_for_graph += line + "\n";
  return out;
}

}  // namespace overlap::sim
