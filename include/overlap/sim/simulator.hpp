#pragma once
/// @file
/// A discrete-event simulation of one step on a model of the machine (no GPU needed).
///
/// Per rank: a host thread issues ops in program order, paying `machine::launch_us` each, and stops
/// at a host sync until what it waits for has finished (everything issued before it, or one
/// event: the alltoall dispatcher's token counts). Streams map round-robin onto
/// `cuda_device_max_connections` hardware queues; each queue is FIFO across its streams, so an op
/// whose dependencies are not met blocks every op behind it in that queue (with one connection,
/// the head-of-line blocking TP ordering relies on). An op starts when it is at its queue's head,
/// its predecessors on the rank (program/semantics.hpp: stream, communicator, event, group) are
/// done, and SMs are free: compute takes every free SM, communication kernels take `op::sms` (by default
/// `machine::comm_sms` for collectives, `machine::p2p_sms` for send/recv; none by copy engine) from
/// a running GEMM if need be (which then runs slower until it gets them back when the kernel
/// ends) and hold them from launch; a collective or send/recv transfers only
/// once every member of its rendezvous has launched. When nothing can move while ops remain, the
/// step hangs: the result says so and gives the wait-for graph.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/program/rendezvous.hpp>
#include <overlap/program/semantics.hpp>
#include <overlap/sim/cost_model.hpp>
#include <overlap/sim/result.hpp>

namespace overlap::sim {

struct options {
  int cuda_device_max_connections = 8;
  /// No contention for SMs: every compute kernel gets the whole GPU and communication kernels
  /// none. What is left is the dependencies (hardware-queue order included) and the host's issue
  /// cost: the step time is then the critical path (see bound.hpp).
  bool unlimited_resources = false;
  /// When set, `programs` holds a subset of the step: each absent rank runs as its class
  /// representative does (program/rank_classes.hpp; `class_problems` must be empty), so a
  /// rendezvous starts once its present members have launched. Not owned.
  const schedule::rank_classes* classes = nullptr;
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
  /// Compute: the share of the op's work done by `since`, and its duration on its current SMs;
  /// when its SMs change, the rest takes what the cost model says for the new count.
  double done = 0, since = 0, duration = 0;
  double wave = 0;  ///< compute: the time of one of its waves on its current SMs (0: not in waves)
  long group = -1;  ///< rendezvous group for communication ops
};

struct rank_state {
  explicit rank_state(const schedule::program& p) : order(p) {}
  schedule::rank_order order;
  std::vector<op_state> ops;
  std::vector<std::vector<std::size_t>> queues;  ///< op indices per hardware queue, issue order
  std::vector<std::size_t> head;
  std::vector<std::size_t> running_compute;  ///< compute ops now running, in start order
  std::vector<std::size_t> queue_order;      ///< hardware queues in dispatch order
  bool fixed_order = true;  ///< one stream per queue: the order never changes, it is sorted once
  double wake_at = std::numeric_limits<double>::infinity();  ///< the earliest issue wake-up queued
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

/// The links communication op `o` of `p` loads, as indices into its rank's four (0 NVLink out,
/// 1 NVLink in, 2 network out, 3 network in): a send the outgoing one, a receive the incoming one,
/// a collective both; the network's when its transfer leaves the node. The simulator shares
/// these links; the lower bound sums their busy time.
template <class F>
void for_each_link(const schedule::program& p, const schedule::op& o, int gpus_per_node, F f) {
  const std::size_t base = schedule::crosses_nodes(p, o, gpus_per_node) ? 2 : 0;
  if (o.kind != schedule::op_kind::recv) f(base);
  if (o.kind != schedule::op_kind::send) f(base + 1);
}

/// What the event loop itself reads of the machine (the cost model reads the rest).
inline void check_machine(const machine& m) {
  if (m.sms < 1 || m.comm_sms < 0 || m.p2p_sms < 0 || !std::isfinite(m.launch_us) || m.launch_us < 0)
    throw std::invalid_argument("simulate: the machine needs sms >= 1, comm_sms and p2p_sms >= 0 and a finite "
                                "launch_us >= 0 (it has sms " + std::to_string(m.sms) + ", comm_sms " +
                                std::to_string(m.comm_sms) + ", p2p_sms " + std::to_string(m.p2p_sms) +
                                ", launch_us " + std::to_string(m.launch_us) + ")");
}

}  // namespace detail

/// Simulates one step: `programs` holds one program per rank (or, with `options::classes`, per
/// representative). Throws std::invalid_argument for a
/// step `verify` rejects as malformed (the first problem), a machine the loop cannot run, and a
/// cost that is not a finite time >= 0 (naming the rank, the op and the value). Ranks that
/// disagree on a rendezvous (a collective's kind or size, a send's size) never start it: a hang,
/// with the disagreement in the wait-for graph, as on NCCL.
inline result simulate(const std::vector<schedule::program>& programs, const cost_model& cost,
                       const options& opt = {}) {
  using detail::never;
  using detail::state;
  using schedule::op_kind;
  const machine& m = cost.machine();
  const int connections = std::max(1, opt.cuda_device_max_connections);

  for (const schedule::program& p : programs) {
    const auto problems = schedule::structure_problems(p);
    if (!problems.empty())
      throw std::invalid_argument("simulate: rank " + std::to_string(p.rank) + " op " +
                                  std::to_string(problems.front().op) + ": " + problems.front().text +
                                  " (verify::verify lists every problem)");
  }
  if (const auto problems = schedule::step_problems(programs); !problems.empty())
    throw std::invalid_argument("simulate: rank " + std::to_string(problems.front().rank) + ": " +
                                problems.front().reason + " (verify::verify lists every problem)");
  if (opt.classes)
    if (const std::string problem = schedule::class_problems(programs, *opt.classes); !problem.empty())
      throw std::invalid_argument("simulate: the programs cannot stand for the step of their class map: " + problem);
  detail::check_machine(m);
  // A cost must be a finite time: NaN would stall the event loop, a negative one run time back.
  const auto checked = [&](double us, std::size_t pi, std::size_t i) {
    if (!std::isfinite(us) || us < 0)
      throw std::invalid_argument("simulate: the cost model gives rank " + std::to_string(programs[pi].rank) +
                                  " op " + std::to_string(i) + " (" + schedule::display_name(programs[pi].ops[i]) +
                                  ") " + std::to_string(us) + " us; a cost must be finite and >= 0");
    return us;
  };
  std::vector<detail::rank_state> ranks;
  ranks.reserve(programs.size());
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const schedule::program& p = programs[pi];
    detail::rank_state& rs = ranks.emplace_back(p);
    rs.ops.resize(p.ops.size());
    rs.queues.resize(std::max<std::size_t>(1, std::min<std::size_t>(p.streams.size(), connections)));
    rs.head.assign(rs.queues.size(), 0);
    rs.free_sms = m.sms;
    rs.fixed_order = p.streams.size() <= rs.queues.size();
    if (rs.fixed_order) {  // queue q holds stream q
      for (std::size_t q = 0; q < rs.queues.size(); ++q) rs.queue_order.push_back(q);
      std::stable_sort(rs.queue_order.begin(), rs.queue_order.end(), [&](std::size_t a, std::size_t b) {
        return a < p.streams.size() && b < p.streams.size() && p.streams[a].priority < p.streams[b].priority;
      });
    }
  }
  const schedule::rendezvous_set matched = schedule::match_rendezvous(programs);
  // Unmatched ops keep group -1 and never complete; so does a group with a missing member.
  for (std::size_t g = 0; g < matched.groups.size(); ++g)
    for (const auto& member : matched.groups[g])
      ranks[member.program].ops[member.op].group = static_cast<long>(g);
  // A group starts with every member present; with classes, absent members are their
  // representatives, present members of the group (class_problems).
  std::vector<char> present;
  if (opt.classes) {
    present.assign(static_cast<std::size_t>(opt.classes->world()), 0);
    for (const schedule::program& p : programs) present[static_cast<std::size_t>(p.rank)] = 1;
  }
  std::vector<int> expected_size(matched.groups.size(), 0), group_size(matched.groups.size(), 0);
  for (std::size_t g = 0; g < matched.groups.size(); ++g) {
    const auto& first = matched.groups[g].front();
    const schedule::op& o = programs[first.program].ops[first.op];
    const std::vector<int>& members = programs[first.program].comms[o.comm].ranks;
    group_size[g] = o.kind == op_kind::collective ? static_cast<int>(members.size()) : 2;
    expected_size[g] = o.kind == op_kind::collective && opt.classes
                           ? static_cast<int>(std::count_if(members.begin(), members.end(),
                                                            [&](int r) { return present[static_cast<std::size_t>(r)] != 0; }))
                           : group_size[g];
  }

  // Links: per rank, NVLink out and in, network out and in (detail::for_each_link). The
  // transfers in flight on a link share it equally:
  // a transfer progresses at the smallest share among its links, and its end moves whenever a
  // transfer on one of them starts or ends.
  struct transfer {
    double work = 0;   ///< the bandwidth part of its time, at the full rate
    double left = 0;   ///< of which left, in microseconds at the full rate
    double rate = 1;   ///< its share now
    double since = 0;  ///< when `left` was last brought up to date (or its latency ends)
    std::vector<std::size_t> links;
  };
  std::vector<transfer> transfers(matched.groups.size());
  std::vector<std::vector<std::size_t>> on_link(4 * programs.size());  // groups in flight per link

  using running_entry = std::tuple<double, std::size_t, std::size_t>;
  std::priority_queue<running_entry, std::vector<running_entry>, std::greater<>> running;
  // The first predecessor of op i that is not done, or -1.
  const auto blocker = [&](std::size_t pi, std::size_t i) -> long {
    for (const std::size_t j : ranks[pi].order.predecessors(i))
      if (ranks[pi].ops[j].now != state::done) return static_cast<long>(j);
    return -1;
  };
  // Brings transfer g up to date at `t` and gives it its share now; its members end when its
  // work is done at that rate.
  const auto rerate = [&](std::size_t g, double t) {
    transfer& x = transfers[g];
    if (t > x.since) {  // past its latency: its work progressed at the old rate
      x.left = std::max(0.0, x.left - (t - x.since) * x.rate);
      x.since = t;
    }
    x.rate = 1;
    for (const std::size_t l : x.links) x.rate = std::min(x.rate, 1.0 / static_cast<double>(on_link[l].size()));
    const double end = x.since + x.left / x.rate;
    for (const auto& mem : matched.groups[g]) {
      ranks[mem.program].ops[mem.op].end = end;
      running.emplace(end, mem.program, mem.op);  // an earlier entry is now stale and skipped
    }
  };
  // A transfer started or ended on `links` at `t`: every transfer in flight on one of them gets
  // its new share.
  std::vector<std::size_t> touched;
  const auto reshare = [&](const std::vector<std::size_t>& links, double t) {
    touched.clear();
    for (const std::size_t l : links) touched.insert(touched.end(), on_link[l].begin(), on_link[l].end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const std::size_t h : touched) rerate(h, t);
  };
  const auto start_group = [&](std::size_t g, double t) {
    const auto& members = matched.groups[g];
    if (static_cast<int>(members.size()) != expected_size[g] || !matched.disagreement[g].empty()) return false;
    for (const auto& mem : members)
      if (ranks[mem.program].ops[mem.op].now != state::launched) return false;
    const schedule::program& first = programs[members.front().program];
    const schedule::op& o = first.ops[members.front().op];
    placement where{group_size[g], 0};
    for (const auto& mem : members)
      where.off_node_peers = std::max(where.off_node_peers,
                                      schedule::off_node_peers(programs[mem.program], programs[mem.program].ops[mem.op],
                                                               m.gpus_per_node));
    const double us = checked(cost.comm_us(o, where), members.front().program, members.front().op);
    const double latency = std::min(us, checked(cost.comm_latency_us(o, where), members.front().program, members.front().op));
    for (const auto& mem : members) {
      auto& s = ranks[mem.program].ops[mem.op];
      s.now = state::running;
      s.start = t;
    }
    transfer& x = transfers[g];
    x.work = x.left = us - latency;
    x.since = t + latency;
    x.links.clear();
    if (!opt.unlimited_resources)
      for (const auto& mem : members)
        detail::for_each_link(programs[mem.program], programs[mem.program].ops[mem.op], m.gpus_per_node,
                              [&](std::size_t l) { x.links.push_back(4 * mem.program + l); });
    for (const std::size_t l : x.links) on_link[l].push_back(g);
    if (x.links.empty()) rerate(g, t);
    else reshare(x.links, t);
    return true;
  };

  // A running compute op's SMs become `sms` at `t`: the work left runs at the new count's speed.
  const auto resize = [&](std::size_t pi, std::size_t i, int sms, double t) {
    detail::op_state& s = ranks[pi].ops[i];
    s.done = std::min(1.0, s.done + (s.duration > 0 ? (t - s.since) / s.duration : 1.0));
    s.since = t;
    s.sms = sms;
    s.duration = checked(cost.compute_us(programs[pi].ops[i], sms), pi, i);
    s.wave = cost.wave_us(programs[pi].ops[i], sms);
    s.end = t + (1 - s.done) * s.duration;
    running.emplace(s.end, pi, i);  // the earlier entry is now stale and skipped
  };
  // When the first running compute op of the rank whose blocks hold SMs ends its current wave
  // (`t` if one is at a wave's end, or none has waves).
  const auto wave_end = [&](std::size_t pi, double t) {
    double first = never;
    for (const std::size_t i : ranks[pi].running_compute) {
      const detail::op_state& s = ranks[pi].ops[i];
      if (s.wave <= 0) return t;
      if (t - s.since < 1e-9) {  // blocks placed now (the op started or changed SMs) hold a whole wave
        first = std::min(first, t + s.wave);
        continue;
      }
      const double left = std::fmod(s.end - t, s.wave);
      first = std::min(first, left < 1e-6 * s.wave || s.wave - left < 1e-6 * s.wave ? t : t + left);
    }
    return first == never ? t : first;
  };
  // Moves up to `count` SMs from the rank's running compute ops to its free pool.
  const auto take_sms = [&](std::size_t pi, int count, double t) {
    detail::rank_state& rs = ranks[pi];
    for (const std::size_t i : rs.running_compute) {
      if (count <= 0) break;
      const int have = rs.ops[i].sms;
      if (have < 2 || (m.persistent_gemms && rs.ops[i].wave > 0)) continue;
      const int taken = std::min(count, have - 1);
      resize(pi, i, have - taken, t);
      rs.free_sms += taken;
      count -= taken;
    }
  };
  // Returns free SMs to the rank's running compute ops that were slowed, which speed up again.
  const auto give_back_sms = [&](std::size_t pi, double t) {
    detail::rank_state& rs = ranks[pi];
    for (const std::size_t i : rs.running_compute) {
      if (rs.free_sms <= 0) break;
      const int have = rs.ops[i].sms;
      if (have >= m.sms) continue;
      const int given = std::min(rs.free_sms, m.sms - have);
      rs.free_sms -= given;
      resize(pi, i, have + given, t);
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
            if (blocker(pi, i) >= 0) break;
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
        // Each hardware queue dispatches its head while the head can start; the queues whose
        // heads are on higher-priority streams first (the block scheduler serves pending work of
        // higher-priority streams first when SMs free up).
        if (!rs.fixed_order) {
          rs.queue_order.clear();
          for (std::size_t q = 0; q < rs.queues.size(); ++q)
            if (rs.head[q] < rs.queues[q].size()) rs.queue_order.push_back(q);
        }
        if (!rs.fixed_order && rs.queue_order.size() > 1)
          std::stable_sort(rs.queue_order.begin(), rs.queue_order.end(), [&](std::size_t a, std::size_t b) {
            return p.streams[static_cast<std::size_t>(p.ops[rs.queues[a][rs.head[a]]].stream)].priority <
                   p.streams[static_cast<std::size_t>(p.ops[rs.queues[b][rs.head[b]]].stream)].priority;
          });
        for (const std::size_t q : rs.queue_order) {
          while (rs.head[q] < rs.queues[q].size()) {
            const std::size_t i = rs.queues[q][rs.head[q]];
            const schedule::op& o = p.ops[i];
            detail::op_state& s = rs.ops[i];
            if (s.issued_at > t) {
              // One wake-up per rank and time: every pass over a blocked queue would add another.
              if (rs.wake_at > s.issued_at) {
                rs.wake_at = s.issued_at;
                running.emplace(s.issued_at, pi, wake);
              }
              break;
            }
            if (blocker(pi, i) >= 0) break;
            if (o.kind == op_kind::record || o.kind == op_kind::wait) {
              s.now = state::done;
              s.start = s.end = t;
            } else if (opt.unlimited_resources) {
              s.sms = 0;
              if (o.kind == op_kind::compute) {
                s.now = state::running;
                s.start = t;
                s.end = t + checked(cost.compute_us(o, m.sms), pi, i);
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
              s.start = s.since = t;
              s.duration = checked(cost.compute_us(o, s.sms), pi, i);
              s.wave = cost.wave_us(o, s.sms);
              s.end = t + s.duration;
              running.emplace(s.end, pi, i);
              rs.running_compute.push_back(i);
            } else {
              // A communication kernel that finds the SMs taken gets them as the running
              // kernels' blocks retire: a GEMM's at the end of its current wave (its hardware
              // queue waits till then; the GEMM's later waves run on fewer SMs), a persistent
              // GEMM's only at its end; other kernels' blocks are short and retire at once.
              const int want =
                  o.sms >= 0 ? o.sms : std::max(1, o.kind == op_kind::collective ? m.comm_sms : m.p2p_sms);
              if (rs.free_sms < want) {
                if (!m.persistent_gemms) {
                  const double retire = wave_end(pi, t);
                  if (retire > t) {
                    running.emplace(retire, pi, wake);
                    break;
                  }
                }
                take_sms(pi, want - rs.free_sms, t);
              }
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
        if (ranks[pi].wake_at <= t) ranks[pi].wake_at = never;
        touch();
        continue;
      }
      auto& s = ranks[pi].ops[i];
      if (s.now != state::running || s.end != end) continue;  // stale: its SMs changed since
      s.now = state::done;
      touch();
      if (s.group >= 0 && !transfers[static_cast<std::size_t>(s.group)].links.empty()) {
        // The transfer ends (for every member at once): its links are shared by fewer.
        std::vector<std::size_t> links = std::move(transfers[static_cast<std::size_t>(s.group)].links);
        transfers[static_cast<std::size_t>(s.group)].links.clear();
        for (const std::size_t l : links) std::erase(on_link[l], static_cast<std::size_t>(s.group));
        reshare(links, t);
      }
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
    schedule::per_family_array<std::vector<std::pair<double, double>>> comm;
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const schedule::op& o = p.ops[i];
      const detail::op_state& s = rs.ops[i];
      if (s.now != state::done) {
        const std::string where =
            "rank " + std::to_string(p.rank) + " op " + std::to_string(i) + " (" + schedule::display_name(o) + ")";
        out.deadlock = true;
        std::string why;
        if (o.kind == op_kind::host_sync)
          why = o.event < 0 ? "the host waits for earlier ops" : "the host waits for event " + std::to_string(o.event);
        else if (s.now == state::pending) why = "not issued: the host is blocked at a host sync";
        else if (s.now == state::launched)
          why = s.group < 0 ? "launched; no rank issues its matching op"
                : !matched.disagreement[static_cast<std::size_t>(s.group)].empty()
                    ? "launched; its rendezvous never starts: " + matched.disagreement[static_cast<std::size_t>(s.group)]
                    : "launched; waits for the other members of its rendezvous to launch";
        else if (const long j = blocker(pi, i); j >= 0)
          why = "waits for op " + std::to_string(j) + " (" + schedule::display_name(p.ops[static_cast<std::size_t>(j)]) + ")";
        else why = "waits behind the head of its hardware queue";
        blocked.push_back(where + ": " + why);
        continue;
      }
      if (o.kind == op_kind::host_sync) continue;
      out.intervals.push_back({p.rank, o.stream, static_cast<int>(i), s.start, s.end,
                               s.group >= 0 ? transfers[static_cast<std::size_t>(s.group)].work : 0});
      out.step_time_us = std::max(out.step_time_us, s.end);
      if (o.kind == op_kind::compute) compute.emplace_back(s.start, s.end);
      if (schedule::is_communication(o.kind)) comm[static_cast<std::size_t>(o.family())].emplace_back(s.start, s.end);
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

/// Simulates the step that the representatives' programs `representatives` stand for (see
/// `options::classes`): the same step time, exposed communication and, for each representative,
/// intervals as the full step's. Throws std::invalid_argument as `class_problems` says when they
/// cannot stand for it.
inline result simulate(const std::vector<schedule::program>& representatives, const cost_model& cost,
                       const schedule::rank_classes& classes, options opt = {}) {
  opt.classes = &classes;
  return simulate(representatives, cost, opt);
}

}  // namespace overlap::sim
