#pragma once
/// @file
/// Symmetric ranks: ranks whose programs are identical up to renaming of ranks (the same pipeline
/// stage in different data-parallel replicas, the tp positions of a group turned along it, the
/// same place in different expert groups) run identically, so a step can be generated and
/// simulated for one representative per class. `schedule::symmetric_classes` (schedule/classes.hpp) finds them from
/// the layout; this header holds the map and the two checks the rest relies on:
///
/// - `class_problems`: a subset of a step's programs stands for the whole step. Every rendezvous
///   of a present program must have, for each absent member, that member's representative among
///   its present members (a collective over members of one class needs no other member), and each
///   absent send/recv peer must be of the sender's own class (its recv is the sender's own recv
///   from the peer as far behind: the program turned); then the rendezvous starts when its present
///   members have launched, as in the full step, where each absent member launches when its
///   representative does.
/// - `asymmetries`: on the full step, each rank's program is its representative's up to renaming
///   (same streams, ops, keys, sizes, buffers and events; send/recv peers at the same offset from
///   the rank's own place in their communicator; communicators of the same size whose members
///   have the same representatives in the same order; the same off-node peer counts), so the
///   classes are sound. Tests run it on generated steps; the simulator trusts the map.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/semantics.hpp>

namespace overlap::schedule {

/// A partition of a step's ranks 0..world-1 into classes, each named by its representative.
struct rank_classes {
  /// Per global rank: the rank whose program stands for it (its own rank for a representative).
  std::vector<int> representative;

  /// Every rank in a class of its own: the full step.
  static rank_classes each_alone(int world) {
    rank_classes c;
    for (int r = 0; r < world; ++r) c.representative.push_back(r);
    return c;
  }
  int world() const { return static_cast<int>(representative.size()); }
  bool is_representative(int rank) const {
    return rank >= 0 && rank < world() && representative[static_cast<std::size_t>(rank)] == rank;
  }
  /// The representatives, ascending.
  std::vector<int> representatives() const {
    std::vector<int> out;
    for (int r = 0; r < world(); ++r)
      if (is_representative(r)) out.push_back(r);
    return out;
  }
  /// Members per class, indexed by global rank (0 for a rank that is not a representative).
  std::vector<int> sizes() const {
    std::vector<int> out(representative.size(), 0);
    for (const int rep : representative)
      if (rep >= 0 && rep < world()) ++out[static_cast<std::size_t>(rep)];
    return out;
  }
};

/// How the backends introduce a `class_problems` finding.
inline constexpr std::string_view class_problem_lead = "the programs cannot stand for the step of their class map: ";

/// Why the programs `present` (a subset of a step, one per rank) cannot stand for the step the
/// class map describes; empty when they can. Names the first problem found: a map that is not a
/// partition named by its representatives, a rank outside the map, and a rendezvous of a present
/// program with an absent member whose representative is not among its present members (or an
/// absent send/recv peer: a p2p pair needs both sides present).
inline std::string class_problems(const std::vector<program>& present, const rank_classes& classes) {
  const int world = classes.world();
  for (int r = 0; r < world; ++r) {
    const int rep = classes.representative[static_cast<std::size_t>(r)];
    if (rep < 0 || rep >= world || classes.representative[static_cast<std::size_t>(rep)] != rep)
      return "rank " + std::to_string(r) + "'s representative " + std::to_string(rep) +
             " is not a representative of the class map (a rank of 0.." + std::to_string(world - 1) +
             " that represents itself)";
  }
  std::vector<char> here(static_cast<std::size_t>(world), 0);
  for (const program& p : present) {
    if (p.rank < 0 || p.rank >= world)
      return "rank " + std::to_string(p.rank) + " is outside the class map (world " + std::to_string(world) + ")";
    here[static_cast<std::size_t>(p.rank)] = 1;
  }
  const auto in = [&](int r) { return r >= 0 && r < world && here[static_cast<std::size_t>(r)]; };
  for (const program& p : present) {
    // What of each communicator the rank uses: collectives (every member) and send/recv peers.
    std::vector<char> collective(p.comms.size(), 0);
    std::vector<std::pair<std::size_t, int>> peers;
    for (const op& o : p.ops) {
      if (o.kind == op_kind::collective) collective[static_cast<std::size_t>(o.comm)] = 1;
      if (o.kind == op_kind::send || o.kind == op_kind::recv)
        peers.emplace_back(static_cast<std::size_t>(o.comm),
                           p.comms[static_cast<std::size_t>(o.comm)].ranks[static_cast<std::size_t>(o.peer)]);
    }
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    // An absent peer of the rank's own class is the rank itself turned (a TP ring: the
    // rendezvous matching pairs its sends with its own recvs, rendezvous.hpp).
    for (const auto& [c, m] : peers)
      if (!in(m) && (m < 0 || m >= world || classes.representative[static_cast<std::size_t>(m)] != p.rank))
        return "rank " + std::to_string(p.rank) + " sends to or receives from rank " + std::to_string(m) + " on " +
               p.comms[c].name +
               ", which is absent in another class; a send/recv needs both sides present or "
               "of one class (add rank " +
               std::to_string(m) + "'s program, or make it a representative)";
    for (std::size_t ci = 0; ci < p.comms.size(); ++ci) {
      if (!collective[ci]) continue;
      const communicator& c = p.comms[ci];
      for (const int m : c.ranks) {
        if (m < 0 || m >= world)
          return "communicator " + c.name + " of rank " + std::to_string(p.rank) + " has rank " + std::to_string(m) +
                 ", outside the class map (world " + std::to_string(world) + ")";
        if (in(m)) continue;
        const int rep = classes.representative[static_cast<std::size_t>(m)];
        if (!in(rep) || std::find(c.ranks.begin(), c.ranks.end(), rep) == c.ranks.end())
          return "communicator " + c.name + " of rank " + std::to_string(p.rank) + " has rank " + std::to_string(m) +
                 " absent and its representative " + std::to_string(rep) +
                 (in(rep) ? " is not a member" : " absent too") +
                 "; every absent member's representative must be a present member (choose representatives "
                 "that share the rendezvous, e.g. all ranks of data-parallel replica 0)";
      }
    }
  }
  return {};
}

/// Where rank `b`'s program is not its representative `a`'s up to renaming of ranks, in the full
/// step `programs` (one per rank, in rank order or not); empty when every class is sound for a
/// machine of `gpus_per_node` GPUs per node (whose placement the cost model reads). At most
/// `limit` lines.
inline std::vector<std::string> asymmetries(const std::vector<program>& programs, const rank_classes& classes,
                                            int gpus_per_node, std::size_t limit = 20) {
  std::vector<std::string> out;
  std::vector<const program*> of(static_cast<std::size_t>(classes.world()), nullptr);
  for (const program& p : programs)
    if (p.rank >= 0 && p.rank < classes.world()) of[static_cast<std::size_t>(p.rank)] = &p;
  const auto rep_of = [&](int r) {
    return r >= 0 && r < classes.world() ? classes.representative[static_cast<std::size_t>(r)] : -1;
  };
  for (const program& b : programs) {
    if (out.size() >= limit) break;
    const int ra = rep_of(b.rank);
    const program* a = ra >= 0 ? of[static_cast<std::size_t>(ra)] : nullptr;
    const std::string where = "rank " + std::to_string(b.rank) + " (representative " + std::to_string(ra) + ")";
    if (!a) {
      out.push_back(where + ": no program for its representative");
      continue;
    }
    if (a == &b) continue;
    const auto differ = [&](const std::string& what) { out.push_back(where + ": " + what); };
    if (a->streams.size() != b.streams.size() || a->comms.size() != b.comms.size() || a->ops.size() != b.ops.size() ||
        a->num_events != b.num_events || a->buffers != b.buffers || a->buffer_bytes != b.buffer_bytes) {
      differ("the programs differ in streams, communicators, ops, events or buffers (or their sizes)");
      continue;
    }
    bool same = true;
    for (std::size_t s = 0; s < a->streams.size() && same; ++s)
      same = a->streams[s].role == b.streams[s].role && a->streams[s].priority == b.streams[s].priority;
    if (!same) {
      differ("the streams differ");
      continue;
    }
    for (std::size_t c = 0; c < a->comms.size() && same; ++c) {
      const auto& x = a->comms[c].ranks;
      const auto& y = b.comms[c].ranks;
      same = x.size() == y.size();
      for (std::size_t k = 0; k < x.size() && same; ++k) same = rep_of(x[k]) == rep_of(y[k]);
      if (!same)
        differ("communicator " + std::to_string(c) + " (" + a->comms[c].name + " vs " + b.comms[c].name +
               ") has members of other classes");
    }
    if (!same) continue;
    // A peer as its place relative to the rank's own in the communicator: the members of a class
    // may be one program turned (a TP ring), as the rendezvous matching reads them.
    const auto relative = [](const program& p, const op& o) {
      if (o.peer < 0 || o.comm < 0) return o.peer;
      const auto& m = p.comms[static_cast<std::size_t>(o.comm)].ranks;
      const auto n = static_cast<int>(m.size());
      const auto own = static_cast<int>(std::find(m.begin(), m.end(), p.rank) - m.begin());
      return own == n ? o.peer : ((o.peer - own) % n + n) % n;
    };
    for (std::size_t i = 0; i < a->ops.size() && same; ++i) {
      const op& x = a->ops[i];
      const op& y = b.ops[i];
      same = x.kind == y.kind && x.stream == y.stream && x.key == y.key && x.coll == y.coll && x.comm == y.comm &&
             relative(*a, x) == relative(b, y) && x.seq == y.seq && x.bytes == y.bytes && x.flops == y.flops &&
             x.gemm == y.gemm && x.memory_bytes == y.memory_bytes && x.event == y.event && x.sms == y.sms &&
             x.group == y.group && x.reads == y.reads && x.writes == y.writes;
      if (same && is_communication(x.kind))
        same = off_node_peers(*a, x, gpus_per_node) == off_node_peers(b, y, gpus_per_node);
      if (!same) differ("op " + std::to_string(i) + " (" + display_name(x) + ") differs");
    }
  }
  return out;
}

}  // namespace overlap::schedule
