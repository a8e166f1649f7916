#pragma once
/// @file
/// Matching communication across ranks: the k-th collective of a communicator on every member
/// forms one rendezvous, and so does the n-th send from rank a to rank b with the n-th recv on b
/// from a. The verifier and the simulator both build on this one matching.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>

namespace overlap::schedule {

/// An op of one program: `program` indexes the step's program list.
struct op_ref {
  std::size_t program = 0;
  std::size_t op = 0;
};

/// A rank, an op (-1 for none) and why it cannot be matched.
struct match_problem {
  int rank = 0;
  int op = -1;
  std::string reason;
};

struct rendezvous_set {
  std::vector<std::vector<op_ref>> groups;  ///< each: the ops that complete together
  /// Per group: empty when its members agree; else which ranks disagree on what (a kind, a size):
  /// NCCL would hang or corrupt memory, so the group never completes.
  std::vector<std::string> disagreement;
  std::vector<match_problem> problems;      ///< empty when every comm op has its partners
};

/// What makes a step's programs unfit to be matched at all: two programs for one rank, a
/// negative rank, a communicator that lists a rank twice, and a communicator name whose member
/// list differs between the programs that hold it (NCCL would build two different groups, or
/// none). Empty for a well-formed step.
inline std::vector<match_problem> step_problems(const std::vector<program>& programs) {
  std::vector<match_problem> out;
  std::map<int, std::size_t> seen;  // rank -> program index
  std::map<std::string, std::pair<int, const std::vector<int>*>> first;  // name -> (rank, members)
  const auto list = [](const std::vector<int>& ranks) {
    std::string text = "{";
    for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
    return text + "}";
  };
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const program& p = programs[pi];
    if (p.rank < 0) out.push_back({p.rank, -1, "rank " + std::to_string(p.rank) + " is negative"});
    else if (!seen.emplace(p.rank, pi).second)
      out.push_back({p.rank, -1, "two programs for rank " + std::to_string(p.rank) + " (programs " +
                                     std::to_string(seen[p.rank]) + " and " + std::to_string(pi) + ")"});
    for (const communicator& c : p.comms) {
      std::vector<int> sorted = c.ranks;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
        out.push_back({p.rank, -1, "communicator " + c.name + " lists a rank twice: " + list(c.ranks)});
      const auto [it, fresh] = first.emplace(c.name, std::pair{p.rank, &c.ranks});
      if (!fresh && *it->second.second != c.ranks)
        out.push_back({p.rank, -1, "communicator " + c.name + " has members " + list(c.ranks) + " here but " +
                                       list(*it->second.second) + " on rank " + std::to_string(it->second.first) +
                                       " (one name, one group: NCCL would hang or mix up ranks)"});
    }
  }
  return out;
}

/// Matches every collective, send and recv of a step (ops must reference valid communicators, and
/// `step_problems` must be empty).
inline rendezvous_set match_rendezvous(const std::vector<program>& programs) {
  rendezvous_set out;
  std::map<std::string, std::map<int, std::vector<op_ref>>> collectives;  // name -> rank -> ops
  std::map<std::tuple<std::string, int, int>, std::vector<op_ref>> sends, recvs;  // (name, from, to)
  std::map<std::string, std::vector<int>> members;
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const program& p = programs[pi];
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const op& o = p.ops[i];
      if (!is_communication(o.kind)) continue;
      const communicator& c = p.comms[o.comm];
      members.emplace(c.name, c.ranks);
      if (o.kind == op_kind::collective) collectives[c.name][p.rank].push_back({pi, i});
      if (o.kind == op_kind::send) sends[{c.name, p.rank, c.ranks[o.peer]}].push_back({pi, i});
      if (o.kind == op_kind::recv) recvs[{c.name, c.ranks[o.peer], p.rank}].push_back({pi, i});
    }
  }
  const auto at = [&](op_ref r) -> const op& { return programs[r.program].ops[r.op]; };
  const auto rank_of = [&](op_ref r) { return programs[r.program].rank; };
  const auto problem = [&](int rank, long op_index, std::string why) {
    out.problems.push_back({rank, static_cast<int>(op_index), std::move(why)});
  };

  for (const auto& [name, by_rank] : collectives) {
    std::size_t length = 0;
    for (const auto& [rank, list] : by_rank)
      if (list.size() > length) length = list.size();
    for (std::size_t k = 0; k < length; ++k) {
      std::vector<op_ref> group;
      std::string disagrees;
      for (const int r : members[name]) {
        const auto it = by_rank.find(r);
        const std::size_t have = it == by_rank.end() ? 0 : it->second.size();
        if (k >= have) {
          problem(r, -1, "communicator " + name + " has " + std::to_string(have) +
                             " collectives here but " + std::to_string(length) +
                             " on another rank: collective #" + std::to_string(k) +
                             " is never issued (hang)");
          continue;
        }
        const op_ref cur = it->second[k];
        if (at(cur).seq != static_cast<std::int64_t>(k))
          problem(r, static_cast<long>(cur.op),
                  "sequence number " + std::to_string(at(cur).seq) + " on " + name +
                      " where the issue order gives " + std::to_string(k));
        if (!group.empty()) {
          const op& a = at(group.front());
          const op& b = at(cur);
          if (a.coll != b.coll || a.bytes != b.bytes) {
            problem(r, static_cast<long>(cur.op),
                    "collective #" + std::to_string(k) + " on " + name + " is " +
                        std::string(to_string(b.coll)) + " of " + std::to_string(b.bytes) + " bytes here but " +
                        std::string(to_string(a.coll)) + " of " + std::to_string(a.bytes) + " bytes on rank " +
                        std::to_string(rank_of(group.front())) + " (ranks issue " + name +
                        "'s collectives in different orders: hang)");
            if (disagrees.empty())
              disagrees = "ranks " + std::to_string(rank_of(group.front())) + " and " + std::to_string(r) +
                          " disagree on collective #" + std::to_string(k) + " of " + name + ": " +
                          std::string(to_string(a.coll)) + " of " + std::to_string(a.bytes) + " bytes vs " +
                          std::string(to_string(b.coll)) + " of " + std::to_string(b.bytes) + " bytes";
          }
        }
        group.push_back(cur);
      }
      out.groups.push_back(std::move(group));
      out.disagreement.push_back(std::move(disagrees));
    }
  }

  for (const auto& [key, list] : sends) {
    const auto it = recvs.find(key);
    const std::size_t matched = it == recvs.end() ? 0 : it->second.size();
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (k >= matched) {
        problem(rank_of(list[k]), static_cast<long>(list[k].op),
                "send #" + std::to_string(k) + " on " + std::get<0>(key) +
                    " has no matching recv (hang)");
        continue;
      }
      const op_ref peer = it->second[k];
      std::string disagrees;
      if (at(list[k]).bytes != at(peer).bytes) {
        disagrees = "send of " + std::to_string(at(list[k]).bytes) + " bytes meets a recv of " +
                    std::to_string(at(peer).bytes) + " bytes on rank " + std::to_string(rank_of(peer));
        problem(rank_of(list[k]), static_cast<long>(list[k].op), disagrees);
        disagrees = "ranks " + std::to_string(rank_of(list[k])) + " and " + std::to_string(rank_of(peer)) +
                    " disagree on send/recv #" + std::to_string(k) + " on " + std::get<0>(key) + ": " + disagrees;
      }
      out.groups.push_back({list[k], peer});
      out.disagreement.push_back(std::move(disagrees));
    }
  }
  for (const auto& [key, list] : recvs) {
    const auto it = sends.find(key);
    const std::size_t matched = it == sends.end() ? 0 : it->second.size();
    for (std::size_t k = matched; k < list.size(); ++k)
      problem(rank_of(list[k]), static_cast<long>(list[k].op),
              "recv #" + std::to_string(k) + " on " + std::get<0>(key) +
                  " has no matching send (hang)");
  }
  return out;
}

}  // namespace overlap::schedule
