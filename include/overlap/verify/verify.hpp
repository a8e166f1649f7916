#pragma once
/// @file
/// The verifier: checks the programs of all ranks of a step before anything runs. It rejects, with
/// the rank, the op and the reason:
/// - a malformed op (kind, stream, communicator, peer, event or buffer out of range, a negative or
///   non-finite size), and a malformed step (two programs for one rank, a communicator name with
///   different member lists on different ranks);
/// - a communicator whose collective sequence differs between its ranks;
/// - a send or recv without its matching counterpart (peer, count and bytes);
/// - an event wait with no earlier record of that event;
/// - a cycle in the dependency graph (a hang), with the ops on the cycle;
/// - a read of a buffer that does not depend on the op that wrote it, and a write of a buffer
///   that does not wait for every earlier reader (reuse before its readers are done);
/// - two buffers of one program that describe the same tensor: a buffer's identity is its index
///   in `program::buffers` (what the data-flow checks follow), so each tensor is listed once
///   (buffers left undescribed, `buffer{}`, are told apart by their index alone);
/// - a read of a buffer that no op of its program writes, where the buffer's kind is made during
///   the step (an activation, a workspace, tokens...): nothing ever computes what the op reads.
///   Model state (parameters, gradients, the optimizer's shard and state) and userbuffers exist
///   before the step, so a read of them with no write before it is accepted; so is a read of the
///   first layer's input in a program without the embedding (a slot or a family built alone takes
///   it as the data loader's batch), and of a buffer left undescribed (its kind is not said).
/// Dependencies are what program/semantics.hpp says: the order on each rank (stream and
/// communicator FIFO, events, host syncs, NCCL groups) and the cross-rank rendezvous of matching
/// collectives and send/recv pairs. A step generated once per class of symmetric ranks is checked
/// on its representatives (`verify(representatives, classes)`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/program/rendezvous.hpp>
#include <overlap/program/semantics.hpp>

namespace overlap::verify {

/// One reason to reject a step: on `rank`, the op at index `op` (or -1 for the whole program).
struct finding {
  int rank = 0;
  int op = -1;
  std::string reason;
};

/// "rank R op I (name): reason".
inline std::string describe(const finding& f, const std::vector<schedule::program>& programs) {
  if (f.rank < 0 && f.op < 0) return "step: " + f.reason;
  std::string where = "rank " + std::to_string(f.rank);
  if (f.op >= 0) {
    where += " op " + std::to_string(f.op);
    for (const auto& p : programs)
      if (p.rank == f.rank && f.op < static_cast<int>(p.ops.size()))
        where += " (" + schedule::display_name(p.ops[static_cast<std::size_t>(f.op)]) + ")";
  }
  return where + ": " + f.reason;
}

namespace detail {

using schedule::op_kind;

/// A buffer's description, hashed (two equal descriptions: one tensor).
struct buffer_hash {
  std::size_t operator()(const schedule::buffer& b) const {
    std::uint64_t h = static_cast<std::uint64_t>(b.kind) * 0x9e3779b97f4a7c15ull ^ static_cast<std::uint64_t>(b.of);
    for (const int v : {b.at.layer, b.at.micro_batch, b.at.chunk, b.at.bucket, b.at.split, int{b.expert}})
      h = (h ^ static_cast<std::uint32_t>(v)) * 0x100000001b3ull;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

/// Successor lists of a graph's nodes in one array: node n's are to[begin[n] .. begin[n + 1]).
struct adjacency {
  std::vector<std::size_t> begin{0}, to;
  std::span<const std::size_t> of(std::size_t n) const { return {to.data() + begin[n], begin[n + 1] - begin[n]}; }
};

/// Ops of all ranks as one graph; rendezvous partners are contracted into one node. The edges
/// and the contracted graph's successors are flat lists (a step has millions of ops: a vector
/// per node would be an allocation per op).
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
    local_.begin.reserve(total + 1);
  }

  std::size_t node(std::size_t program, std::size_t op) const { return offset_[program] + op; }
  /// The rank's own edges, as the one semantics gives them: from each predecessor to the op.
  /// Programs are added in order, each once.
  void add_program(const schedule::program& p) {
    const std::size_t base = local_.begin.size() - 1, first = local_.to.size();
    schedule::rank_order(p).successors(begin_, to_);
    for (std::size_t i = 0; i + 1 < begin_.size(); ++i) local_.begin.push_back(first + begin_[i + 1]);
    for (const auto to : to_) local_.to.push_back(base + to);
  }
  void unite(std::size_t a, std::size_t b) { parent_[find(a)] = find(b); }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  std::size_t size() const { return parent_.size(); }

  /// The contracted graph's successors (of each root; others have none), in the order of the
  /// edges they come from.
  adjacency contracted() {
    adjacency out;
    std::vector<std::size_t> count(size() + 1, 0);
    for (std::size_t from = 0; from < size(); ++from)
      for (const std::size_t to : local_.of(from))
        if (find(from) != find(to)) ++count[find(from) + 1];
    for (std::size_t n = 0; n < size(); ++n) count[n + 1] += count[n];
    out.begin = count;
    out.to.resize(count[size()]);
    for (std::size_t from = 0; from < size(); ++from)
      for (const std::size_t to : local_.of(from))
        if (find(from) != find(to)) out.to[count[find(from)]++] = find(to);
    return out;
  }

  /// Edges as added (before contraction): inside one program, from an earlier op to a later one.
  std::span<const std::size_t> local_successors(std::size_t n) const { return local_.of(n); }

  /// (program index, op index) of a node.
  std::pair<std::size_t, std::size_t> locate(std::size_t n) const {
    const auto after = std::upper_bound(offset_.begin(), offset_.end(), n);
    const auto p = static_cast<std::size_t>(after - offset_.begin()) - 1;
    return {p, n - offset_[p]};
  }

 private:
  std::vector<std::size_t> offset_;
  std::vector<std::size_t> parent_;
  adjacency local_;
  std::vector<schedule::rank_order::index> begin_, to_;  ///< one program's successors, as added
};

/// Contracts each rendezvous into one node; unmatched communication becomes findings (a member
/// absent by design, in a step of class representatives, is no finding).
inline void rendezvous(const std::vector<schedule::program>& programs, step_graph& g, std::vector<finding>& out,
                       bool classes) {
  const schedule::rendezvous_set matched = schedule::match_rendezvous(programs, {.absent_by_design = classes});
  for (const auto& problem : matched.problems) out.push_back({problem.rank, problem.op, problem.reason});
  for (const auto& group : matched.groups)
    for (const schedule::op_ref& member : group)
      g.unite(g.node(member.program, member.op), g.node(group.front().program, group.front().op));
}

/// Malformed programs and steps: ops naming what does not exist, two programs for one rank, one
/// communicator name with two member lists. Nothing else is checked on such a step.
inline std::vector<finding> malformed(const std::vector<schedule::program>& programs) {
  std::vector<finding> out;
  for (const auto& p : programs)
    for (const auto& problem : schedule::structure_problems(p)) out.push_back({p.rank, problem.op, problem.text});
  for (const auto& problem : schedule::step_problems(programs))
    out.push_back({problem.rank, problem.op, problem.reason});
  return out;
}

/// The contracted graph's roots in topological order, as far as Kahn's algorithm places them, and
/// each root's count of predecessors left unplaced: what is left lies on or behind a cycle.
struct topological_sort {
  std::vector<std::size_t> order;
  std::vector<int> indegree;
  bool complete = true;  ///< every root placed: the graph is acyclic
};

inline topological_sort sort_topologically(step_graph& g, const adjacency& succ) {
  topological_sort out;
  out.indegree.assign(g.size(), 0);
  for (std::size_t n = 0; n < g.size(); ++n)
    if (g.find(n) == n)
      for (const std::size_t m : succ.of(n)) ++out.indegree[m];
  std::vector<std::size_t> ready;
  for (std::size_t n = 0; n < g.size(); ++n)
    if (g.find(n) == n && out.indegree[n] == 0) ready.push_back(n);
  while (!ready.empty()) {
    const std::size_t n = ready.back();
    ready.pop_back();
    out.order.push_back(n);
    for (const std::size_t m : succ.of(n))
      if (--out.indegree[m] == 0) ready.push_back(m);
  }
  std::size_t roots = 0;
  for (std::size_t n = 0; n < g.size(); ++n) roots += g.find(n) == n;
  out.complete = out.order.size() == roots;
  return out;
}

/// A node of the contracted graph as the ops it stands for: a step of a cycle may be a
/// rendezvous, so every rank's op in it is named.
inline std::string describe_node(const std::vector<schedule::program>& programs, step_graph& g, std::size_t node) {
  std::string text;
  for (std::size_t m = 0; m < g.size(); ++m) {
    if (g.find(m) != node) continue;
    const auto [pi, oi] = g.locate(m);
    text += (text.empty() ? "" : " = ") + std::string("rank ") + std::to_string(programs[pi].rank) + " op " +
            std::to_string(oi) + " (" + schedule::display_name(programs[pi].ops[oi]) + ")";
  }
  return text;
}

/// The finding for a graph that `sorted` could not place whole: one cycle, its ops in order.
inline finding dependency_cycle(const std::vector<schedule::program>& programs, step_graph& g, const adjacency& succ,
                                const topological_sort& sorted) {
  const std::vector<int>& indegree = sorted.indegree;
  // Every node Kahn left has a predecessor it also left: walking predecessors must repeat a
  // node, and the walk between the two visits is a cycle.
  std::vector<std::vector<std::size_t>> pred(g.size());
  for (std::size_t n = 0; n < g.size(); ++n)
    for (const std::size_t m : succ.of(n)) pred[m].push_back(n);
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
  std::string cycle;
  for (std::size_t k = path.size(); k-- > static_cast<std::size_t>(seen[n]);)
    cycle += (cycle.empty() ? "" : " -> ") + describe_node(programs, g, path[k]);
  const auto [pi, oi] = g.locate(n);
  return {programs[pi].rank, static_cast<int>(oi), "dependency cycle, the step would hang: " + cycle};
}

/// Whether one op of a program depends on another, judged on the acyclic graph. First on the
/// rank's own edges, which all point forward in issue order: one pass gives every op a vector
/// clock, the latest op of each stream it depends on, and an op depends on an earlier one of
/// stream s if its clock for s has reached it. What that does not show (a path through other
/// ranks, or a race) is searched for in the whole contracted graph, in topological order, only
/// through nodes placed before the target.
class dependence {
 public:
  dependence(const std::vector<schedule::program>& programs, step_graph& g, const adjacency& succ,
             const std::vector<std::size_t>& order)
      : programs_(programs), g_(g), succ_(succ), position_(g.size(), 0), mark_(g.size(), 0) {
    for (std::size_t k = 0; k < order.size(); ++k) position_[order[k]] = k;
  }

  /// The clocks of program `pi`'s ops (ops x streams, in one array, reused for the next
  /// program): `reaches` asks of the program clocked last.
  void clock_program(std::size_t pi) {
    const auto& p = programs_[pi];
    const std::size_t streams = p.streams.size();
    clock_.assign(p.ops.size() * streams, -1);
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      // What op i depends on; then op i itself.
      mine_.assign(clock_.begin() + static_cast<std::ptrdiff_t>(i * streams),
                   clock_.begin() + static_cast<std::ptrdiff_t>((i + 1) * streams));
      if (p.ops[i].kind != schedule::op_kind::host_sync) mine_[p.ops[i].stream] = static_cast<long>(i);
      for (const std::size_t m : g_.local_successors(g_.node(pi, i))) {
        long* const next = clock_.data() + (m - g_.node(pi, 0)) * streams;
        for (std::size_t s = 0; s < streams; ++s) next[s] = std::max(next[s], mine_[s]);
      }
    }
  }

  /// Whether op `b` of program `pi` depends on its op `a` (or meets it in one rendezvous).
  bool reaches(std::size_t pi, std::size_t a, std::size_t b) {
    const schedule::op& x = programs_[pi].ops[a];
    if (a < b && x.kind != schedule::op_kind::host_sync &&
        clock_[b * programs_[pi].streams.size() + static_cast<std::size_t>(x.stream)] >= static_cast<long>(a))
      return true;
    const std::size_t from = g_.find(g_.node(pi, a)), to = g_.find(g_.node(pi, b));
    if (from == to) return true;
    ++search_;
    todo_.assign(1, from);
    while (!todo_.empty()) {
      const std::size_t n = todo_.back();
      todo_.pop_back();
      for (const std::size_t m : succ_.of(n)) {
        if (m == to) return true;
        if (mark_[m] != search_ && position_[m] < position_[to]) {
          mark_[m] = search_;
          todo_.push_back(m);
        }
      }
    }
    return false;
  }

 private:
  const std::vector<schedule::program>& programs_;
  step_graph& g_;
  const adjacency& succ_;
  std::vector<std::size_t> position_;  ///< each root's place in topological order
  std::vector<unsigned> mark_;         ///< the last search that reached each node
  unsigned search_ = 0;
  std::vector<std::size_t> todo_;
  std::vector<long> clock_, mine_;
};

/// "buffer 3 (activation l1 mb0)".
inline std::string buffer_name(const schedule::program& p, int b) {
  return "buffer " + std::to_string(b) + " (" + schedule::display_name(p.buffers[static_cast<std::size_t>(b)]) + ")";
}

/// A buffer is its index: two indices that describe one tensor would hide every hazard between
/// an op that writes through one and an op that reads through the other. Buffers left
/// undescribed (`buffer{}`) are told apart by their index alone.
inline void duplicate_buffers(const schedule::program& p, std::vector<finding>& out) {
  std::unordered_map<schedule::buffer, std::size_t, detail::buffer_hash> first_index;
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    if (p.buffers[b] == schedule::buffer{}) continue;
    const auto [it, added] = first_index.try_emplace(p.buffers[b], b);
    if (!added)
      out.push_back({p.rank, -1,
                     buffer_name(p, static_cast<int>(b)) + " describes the same tensor as buffer " +
                         std::to_string(it->second) + "; a buffer is its index: list it once and name that index"});
  }
}

/// Whether a buffer of kind `k` holds something when the step begins, whoever writes it: the
/// model's state (parameters, their gradients, the optimizer's shard and state) and the userbuffers
/// Transformer Engine registers once, before the first step. Every other kind is made in the step.
constexpr bool exists_before_step(schedule::buffer_kind k) {
  using schedule::buffer_kind;
  return k == buffer_kind::parameters || k == buffer_kind::gradients || k == buffer_kind::parameter_shard ||
         k == buffer_kind::optimizer_state || k == buffer_kind::userbuffer;
}

/// The reads of buffers that no op of `p` writes and that do not exist before the step, each
/// buffer named once, at its first reader. Not judged: model state and userbuffers
/// (`exists_before_step`), the first layer's input in a program without the embedding (a slot
/// or a family built alone takes it as the data loader's batch), and buffers left undescribed
/// (`buffer{}`, whose kind is not said).
inline void unwritten_reads(const schedule::program& p, std::vector<finding>& out) {
  std::vector<char> judged(p.buffers.size(), 0);  // written, not judged, or named already
  bool embeds = false;
  for (const schedule::op& o : p.ops) {
    for (const int b : o.writes) judged[static_cast<std::size_t>(b)] = 1;
    embeds = embeds || o.key.type == schedule::op_type::embedding_fprop;
  }
  for (std::size_t b = 0; b < p.buffers.size(); ++b) {
    const schedule::buffer& x = p.buffers[b];
    const bool batch = !embeds && x.kind == schedule::buffer_kind::activation && x.at.layer == 0;
    if (x == schedule::buffer{} || exists_before_step(x.kind) || batch) judged[b] = 1;
  }
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    for (const int b : p.ops[i].reads) {
      if (judged[static_cast<std::size_t>(b)]) continue;
      judged[static_cast<std::size_t>(b)] = 1;
      out.push_back({p.rank, static_cast<int>(i),
                     "reads " + buffer_name(p, b) +
                         ", which no op of this program writes (only model state and userbuffers exist before the "
                         "step); write it first, with the op that computes or receives it, or read the buffer that "
                         "op writes"});
    }
}

/// The races on program `pi`'s buffers, in issue order: a read that does not depend on the last
/// write, a write that does not wait for the reads since the last write or for that write.
inline void data_hazards(const std::vector<schedule::program>& programs, std::size_t pi, dependence& d,
                         std::vector<finding>& out) {
  const auto& p = programs[pi];
  std::vector<long> writer(p.buffers.size(), -1);
  std::vector<std::vector<std::size_t>> readers(p.buffers.size());
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const schedule::op& o = p.ops[i];
    for (const int b : o.reads) {
      if (writer[b] >= 0 && !d.reaches(pi, static_cast<std::size_t>(writer[b]), i))
        out.push_back({p.rank, static_cast<int>(i),
                       "reads " + buffer_name(p, b) + " without depending on op " + std::to_string(writer[b]) +
                           " that writes it (missing event wait)"});
      readers[b].push_back(i);
    }
    for (const int b : o.writes) {
      for (const std::size_t r : readers[b])
        if (r != i && !d.reaches(pi, r, i))
          out.push_back({p.rank, static_cast<int>(i),
                         "overwrites " + buffer_name(p, b) + " while op " + std::to_string(r) +
                             " may still read it (reuse before its readers are done)"});
      if (writer[b] >= 0 && !d.reaches(pi, static_cast<std::size_t>(writer[b]), i))
        out.push_back({p.rank, static_cast<int>(i),
                       "writes " + buffer_name(p, b) + " concurrently with op " + std::to_string(writer[b]) +
                           " that also writes it"});
      writer[b] = static_cast<long>(i);
      readers[b].clear();
    }
  }
}

/// `verify` of the full step, or with `classes` of the step its representatives stand for: the
/// checks in order, each only on a step that passed those before it (malformed, then the class
/// map, the rendezvous, cycles), the buffers' data flow last.
inline std::vector<finding> verify_step(const std::vector<schedule::program>& programs,
                                        const schedule::rank_classes* classes) {
  std::vector<finding> out = malformed(programs);
  if (!out.empty()) return out;
  if (classes)
    if (const std::string problem = schedule::class_problems(programs, *classes); !problem.empty())
      return {{-1, -1, std::string(schedule::class_problem_lead) + problem}};

  step_graph g(programs);
  for (const schedule::program& p : programs) g.add_program(p);
  rendezvous(programs, g, out, classes != nullptr);
  if (!out.empty()) return out;

  const adjacency succ = g.contracted();
  const topological_sort sorted = sort_topologically(g, succ);
  if (!sorted.complete) return {dependency_cycle(programs, g, succ, sorted)};

  dependence d(programs, g, succ, sorted.order);
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    if (!programs[pi].buffers.empty()) d.clock_program(pi);  // no buffers: no op reads or writes one
    duplicate_buffers(programs[pi], out);
    unwritten_reads(programs[pi], out);
    data_hazards(programs, pi, d, out);
  }
  return out;
}

}  // namespace detail

/// Every reason the programs of one step would hang, race or misbehave; empty when they verify.
/// Defined for any input: a malformed program is findings, never an exception.
/// `programs` holds one program per rank of the step (ranks that share a program included).
inline std::vector<finding> verify(const std::vector<schedule::program>& programs) {
  return detail::verify_step(programs, nullptr);
}

/// The same for the step that the representatives' programs `representatives` stand for
/// (program/rank_classes.hpp; `schedule::compose_class_step` makes both), checked on the
/// representatives alone: their own order, their rendezvous among themselves (a collective waits
/// for its present members; an absent member issues what its representative does), cycles and
/// data hazards. The findings are the full step's, found once per class, when the classes are
/// sound (`schedule::asymmetries` empty on the full step): a path of the full step's dependency
/// graph through absent ranks maps, rank by rank onto their representatives, to a path between the
/// same ops here, and every path here is one of the full step. A class map the representatives
/// cannot stand for (`class_problems`) is one finding of rank -1.
inline std::vector<finding> verify(const std::vector<schedule::program>& representatives,
                                   const schedule::rank_classes& classes) {
  return detail::verify_step(representatives, &classes);
}

/// Every finding of `verify(programs)`, described one per line; empty when the step verifies.
inline std::string verify_report(const std::vector<schedule::program>& programs) {
  std::string text;
  for (const finding& f : verify(programs)) text += describe(f, programs) + "\n";
  return text;
}

}  // namespace overlap::verify
