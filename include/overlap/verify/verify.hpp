#pragma once
/// @file
/// The verifier: checks the programs of all ranks of a step before anything runs. It rejects, with
/// the rank, the op and the reason:
/// - a malformed op (stream, communicator, peer, event or buffer out of range);
/// - a communicator whose collective sequence differs between its ranks;
/// - a send or recv without its matching counterpart (peer, count and bytes);
/// - an event wait with no earlier record of that event;
/// - a cycle in the dependency graph (a hang), with the ops on the cycle;
/// - a read of a buffer that does not depend on the op that wrote it, and a write of a buffer
///   that does not wait for every earlier reader (reuse before its readers are done).
/// Dependencies are stream FIFO, event record -> wait, communicator FIFO, host syncs, and the
/// cross-rank rendezvous of matching collectives and send/recv pairs; the members of an NCCL group
/// start together and what follows the group waits for all of them.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <overlap/schedule/program.hpp>
#include <overlap/schedule/rendezvous.hpp>

namespace overlap::verify {

/// One reason to reject a step: on `rank`, the op at index `op` (or -1 for the whole program).
struct finding {
  int rank = 0;
  int op = -1;
  std::string reason;
};

/// "rank R op I (name): reason".
inline std::string describe(const finding& f, const std::vector<schedule::program>& programs) {
  std::string where = "rank " + std::to_string(f.rank);
  if (f.op >= 0) {
    where += " op " + std::to_string(f.op);
    for (const auto& p : programs)
      if (p.rank == f.rank && f.op < static_cast<int>(p.ops.size()) && !p.ops[f.op].name.empty())
        where += " (" + p.ops[f.op].name + ")";
  }
  return where + ": " + f.reason;
}

namespace detail {

using schedule::op_kind;


/// The position of `rank` in `c`, or -1.
inline int member_index(const schedule::communicator& c, int rank) {
  for (std::size_t i = 0; i < c.ranks.size(); ++i)
    if (c.ranks[i] == rank) return static_cast<int>(i);
  return -1;
}

/// Ops of all ranks as one graph; rendezvous partners are contracted into one node.
class step_graph {
 public:
  explicit step_graph(const std::vector<schedule::program>& programs) {
    std::size_t total = 0;
    for (const auto& p : programs) {
      offset_.push_back(total);
      total += p.ops.size();
    }
    parent_.resize(total);
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
    edges_.resize(total);
  }

  std::size_t node(std::size_t program, std::size_t op) const { return offset_[program] + op; }
  void edge(std::size_t from, std::size_t to) { edges_[from].push_back(to); }
  void unite(std::size_t a, std::size_t b) { parent_[find(a)] = find(b); }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  std::size_t size() const { return parent_.size(); }

  /// The contracted graph's successors.
  std::vector<std::vector<std::size_t>> contracted() {
    std::vector<std::vector<std::size_t>> out(size());
    for (std::size_t from = 0; from < size(); ++from)
      for (const std::size_t to : edges_[from])
        if (find(from) != find(to)) out[find(from)].push_back(find(to));
    return out;
  }

  /// Edges as added (before contraction): inside one program, from an earlier op to a later one.
  const std::vector<std::size_t>& local_successors(std::size_t n) const { return edges_[n]; }

  /// (program index, op index) of a node.
  std::pair<std::size_t, std::size_t> locate(std::size_t n) const {
    std::size_t p = 0;
    while (p + 1 < offset_.size() && offset_[p + 1] <= n) ++p;
    return {p, n - offset_[p]};
  }

 private:
  std::vector<std::size_t> offset_;
  std::vector<std::size_t> parent_;
  std::vector<std::vector<std::size_t>> edges_;
};

inline void check_structure(const schedule::program& p, std::vector<finding>& out) {
  const auto bad = [&](std::size_t i, std::string why) {
    out.push_back({p.rank, static_cast<int>(i), std::move(why)});
  };
  const auto in = [](int v, std::size_t n) { return v >= 0 && static_cast<std::size_t>(v) < n; };
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const schedule::op& o = p.ops[i];
    if (o.kind != op_kind::host_sync && !in(o.stream, p.streams.size()))
      bad(i, "stream " + std::to_string(o.stream) + " does not exist");
    if (schedule::is_communication(o.kind)) {
      if (!in(o.comm, p.comms.size())) {
        bad(i, "communicator " + std::to_string(o.comm) + " does not exist");
        continue;
      }
      const auto& c = p.comms[o.comm];
      if (member_index(c, p.rank) < 0) bad(i, "rank is not a member of communicator " + c.name);
      if (o.kind != op_kind::collective && (!in(o.peer, c.ranks.size()) ||
                                            c.ranks[o.peer] == p.rank))
        bad(i, "peer " + std::to_string(o.peer) + " is not another rank of " + c.name);
    }
    if ((o.kind == op_kind::record || o.kind == op_kind::wait) && !in(o.event, p.num_events))
      bad(i, "event " + std::to_string(o.event) + " does not exist");
    if (o.group >= 0) {
      if (!schedule::is_communication(o.kind)) bad(i, "only communication ops can be grouped");
      const bool continues = i > 0 && p.ops[i - 1].group == o.group;
      if (continues && p.ops[i - 1].stream != o.stream)
        bad(i, "a group's ops must be on one stream");
      for (std::size_t j = 0; j + 1 < i && !continues; ++j)
        if (p.ops[j].group == o.group) {
          bad(i, "a group's ops must be consecutive in issue order");
          break;
        }
    }
    for (const auto& list : {o.reads, o.writes})
      for (const int b : list)
        if (!in(b, p.num_buffers)) bad(i, "buffer " + std::to_string(b) + " does not exist");
  }
}

/// Stream FIFO, communicator FIFO, host syncs and event edges of one rank. The members of an
/// NCCL group share the predecessors the group had when it started, and what follows the group
/// on a stream or communicator follows every member there (a member completes with its own
/// partner, not with the whole group).
inline void local_edges(const schedule::program& p, std::size_t pi, step_graph& g,
                        std::vector<finding>& out) {
  // The ops the next op on a stream (communicator) must follow: one, or a group's members.
  std::vector<std::vector<long>> after_stream(p.streams.size()), after_comm(p.comms.size());
  std::vector<std::vector<long>> group_stream_preds(p.streams.size()), group_comm_preds(p.comms.size());
  std::vector<bool> comm_in_group(p.comms.size(), false);
  std::vector<long> last_record(p.num_events, -1);
  long last_sync = -1;
  const auto follow = [&](const std::vector<long>& preds, std::size_t n) {
    for (const long j : preds) g.edge(g.node(pi, static_cast<std::size_t>(j)), n);
  };
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const schedule::op& o = p.ops[i];
    const std::size_t n = g.node(pi, i);
    if (last_sync >= 0) g.edge(g.node(pi, last_sync), n);
    if (o.kind == op_kind::host_sync) {
      for (std::size_t j = (last_sync < 0 ? 0 : last_sync); j < i; ++j) g.edge(g.node(pi, j), n);
      last_sync = static_cast<long>(i);
      continue;
    }
    const bool continues = o.group >= 0 && i > 0 && p.ops[i - 1].group == o.group;
    if (!continues) comm_in_group.assign(p.comms.size(), false);
    if (continues) {
      follow(group_stream_preds[o.stream], n);
      after_stream[o.stream].push_back(static_cast<long>(i));
    } else {
      follow(after_stream[o.stream], n);
      group_stream_preds[o.stream] = after_stream[o.stream];
      after_stream[o.stream] = {static_cast<long>(i)};
    }
    if (schedule::is_communication(o.kind)) {
      auto& after = after_comm[o.comm];
      if (comm_in_group[o.comm]) {
        follow(group_comm_preds[o.comm], n);
        after.push_back(static_cast<long>(i));
      } else {
        follow(after, n);
        group_comm_preds[o.comm] = after;
        after = {static_cast<long>(i)};
        comm_in_group[o.comm] = o.group >= 0;
      }
    }
    if (o.kind == op_kind::record) last_record[o.event] = static_cast<long>(i);
    if (o.kind == op_kind::wait) {
      if (last_record[o.event] < 0)
        out.push_back({p.rank, static_cast<int>(i),
                       "waits for event " + std::to_string(o.event) +
                           " before any record of it (the wait would not order anything)"});
      else
        g.edge(g.node(pi, last_record[o.event]), n);
    }
  }
}

/// Contracts each rendezvous into one node; unmatched communication becomes findings.
inline void rendezvous(const std::vector<schedule::program>& programs, step_graph& g,
                       std::vector<finding>& out) {
  const schedule::rendezvous_set matched = schedule::match_rendezvous(programs);
  for (const auto& problem : matched.problems)
    out.push_back({problem.rank, problem.op, problem.reason});
  for (const auto& group : matched.groups)
    for (const schedule::op_ref& member : group)
      g.unite(g.node(member.program, member.op), g.node(group.front().program, group.front().op));
}

}  // namespace detail

/// Every reason the programs of one step would hang, race or misbehave; empty when they verify.
/// `programs` holds one program per rank of the step (ranks that share a program included).
inline std::vector<finding> verify(const std::vector<schedule::program>& programs) {
  std::vector<finding> out;
  for (const auto& p : programs) detail::check_structure(p, out);
  if (!out.empty()) return out;

  detail::step_graph g(programs);
  for (std::size_t pi = 0; pi < programs.size(); ++pi)
    detail::local_edges(programs[pi], pi, g, out);
  detail::rendezvous(programs, g, out);
  if (!out.empty()) return out;

  // Kahn's algorithm on the contracted graph; what is left lies on or behind a cycle.
  const auto succ = g.contracted();
  std::vector<int> indegree(g.size(), 0);
  for (std::size_t n = 0; n < g.size(); ++n)
    if (g.find(n) == n)
      for (const std::size_t m : succ[n]) ++indegree[m];
  std::vector<std::size_t> ready, order;
  for (std::size_t n = 0; n < g.size(); ++n)
    if (g.find(n) == n && indegree[n] == 0) ready.push_back(n);
  while (!ready.empty()) {
    const std::size_t n = ready.back();
    ready.pop_back();
    order.push_back(n);
    for (const std::size_t m : succ[n])
      if (--indegree[m] == 0) ready.push_back(m);
  }
  std::size_t roots = 0;
  for (std::size_t n = 0; n < g.size(); ++n) roots += g.find(n) == n;
  if (order.size() != roots) {
    // Every node Kahn left has a predecessor it also left: walking predecessors must repeat a
    // node, and the walk between the two visits is a cycle.
    std::vector<std::vector<std::size_t>> pred(g.size());
    for (std::size_t n = 0; n < g.size(); ++n)
      for (const std::size_t m : succ[n]) pred[m].push_back(n);
    std::size_t n = 0;
    while (g.find(n) != n || indegree[n] == 0) ++n;
    std::vector<std::size_t> path;
    std::vector<int> seen(g.size(), -1);
    while (seen[n] < 0) {
      seen[n] = static_cast<int>(path.size());
      path.push_back(n);
      for (const std::size_t m : pred[n])
        if (indegree[m] > 0) {
          n = m;
          break;
        }
    }
    // A step of the cycle may be a rendezvous: name every rank's op in it.
    const auto describe_node = [&](std::size_t node) {
      std::string text;
      for (std::size_t m = 0; m < g.size(); ++m) {
        if (g.find(m) != node) continue;
        const auto [pi, oi] = g.locate(m);
        text += (text.empty() ? "" : " = ") + std::string("rank ") +
                std::to_string(programs[pi].rank) + " op " + std::to_string(oi);
        if (!programs[pi].ops[oi].name.empty()) text += " (" + programs[pi].ops[oi].name + ")";
      }
      return text;
    };
    std::string cycle;
    for (std::size_t k = path.size(); k-- > static_cast<std::size_t>(seen[n]);)
      cycle += (cycle.empty() ? "" : " -> ") + describe_node(path[k]);
    const auto [pi, oi] = g.locate(n);
    out.push_back({programs[pi].rank, static_cast<int>(oi),
                   "dependency cycle, the step would hang: " + cycle});
    return out;
  }

  // Data hazards, judged on the acyclic graph. First on the rank's own edges, which all point
  // forward in issue order: one pass gives every op a vector clock, the latest op of each stream
  // it depends on, and an op depends on an earlier one of stream s if its clock for s has reached
  // it. What that does not show (a path through other ranks, or a race) is searched for in the
  // whole contracted graph, in topological order, only through nodes placed before the target.
  std::vector<std::vector<std::vector<long>>> clock(programs.size());
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const auto& p = programs[pi];
    auto& c = clock[pi];
    c.assign(p.ops.size(), std::vector<long>(p.streams.size(), -1));
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      std::vector<long> mine = c[i];  // what op i depends on; then op i itself
      if (p.ops[i].kind != schedule::op_kind::host_sync) mine[p.ops[i].stream] = static_cast<long>(i);
      for (const std::size_t m : g.local_successors(g.node(pi, i))) {
        auto& next = c[m - g.node(pi, 0)];
        for (std::size_t s = 0; s < next.size(); ++s) next[s] = std::max(next[s], mine[s]);
      }
    }
  }
  std::vector<std::size_t> position(g.size(), 0);
  for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  std::vector<unsigned> mark(g.size(), 0);
  unsigned search = 0;
  std::vector<std::size_t> todo;
  const auto reaches = [&](std::size_t pi, std::size_t a, std::size_t b) {
    const schedule::op& x = programs[pi].ops[a];
    if (a < b && x.kind != schedule::op_kind::host_sync && clock[pi][b][x.stream] >= static_cast<long>(a))
      return true;
    const std::size_t from = g.find(g.node(pi, a)), to = g.find(g.node(pi, b));
    if (from == to) return true;
    ++search;
    todo.assign(1, from);
    while (!todo.empty()) {
      const std::size_t n = todo.back();
      todo.pop_back();
      for (const std::size_t m : succ[n]) {
        if (m == to) return true;
        if (mark[m] != search && position[m] < position[to]) {
          mark[m] = search;
          todo.push_back(m);
        }
      }
    }
    return false;
  };
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const auto& p = programs[pi];
    std::vector<long> writer(p.num_buffers, -1);
    std::vector<std::vector<std::size_t>> readers(p.num_buffers);
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const schedule::op& o = p.ops[i];
      for (const int b : o.reads) {
        if (writer[b] >= 0 && !reaches(pi, static_cast<std::size_t>(writer[b]), i))
          out.push_back({p.rank, static_cast<int>(i),
                         "reads buffer " + std::to_string(b) + " without depending on op " +
                             std::to_string(writer[b]) + " that writes it (missing event wait)"});
        readers[b].push_back(i);
      }
      for (const int b : o.writes) {
        for (const std::size_t r : readers[b])
          if (r != i && !reaches(pi, r, i))
            out.push_back({p.rank, static_cast<int>(i),
                           "overwrites buffer " + std::to_string(b) + " while op " +
                               std::to_string(r) + " may still read it (reuse before its readers are done)"});
        if (writer[b] >= 0 && !reaches(pi, static_cast<std::size_t>(writer[b]), i))
          out.push_back({p.rank, static_cast<int>(i),
                         "writes buffer " + std::to_string(b) + " concurrently with op " +
                             std::to_string(writer[b]) + " that also writes it"});
        writer[b] = static_cast<long>(i);
        readers[b].clear();
      }
    }
  }
  return out;
}

/// Every finding of `verify(programs)`, described one per line; empty when the step verifies.
inline std::string verify_report(const std::vector<schedule::program>& programs) {
  std::string text;
  for (const finding& f : verify(programs)) text += describe(f, programs) + "\n";
  return text;
}

}  // namespace overlap::verify
