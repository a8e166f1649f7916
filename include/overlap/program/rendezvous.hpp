#pragma once
/// @file
/// Matching communication across ranks: the k-th collective of a communicator on every member
/// forms one rendezvous, and so does the n-th send from rank a to rank b with the n-th recv on b
/// from a. The verifier and the simulator both build on this one matching.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
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
  std::vector<match_problem> problems;      ///< empty when every comm op has its partners
};

/// Matches every collective, send and recv of a step (ops must reference valid communicators).
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
          if (a.coll != b.coll || a.bytes != b.bytes)
            problem(r, static_cast<long>(cur.op),
                    "collective #" + std::to_string(k) + " on " + name + " is " +
                        std::string(to_string(b.coll)) + " of " + std::to_string(b.bytes) + " bytes here but " +
                        std::string(to_string(a.coll)) + " of " + std::to_string(a.bytes) + " bytes on rank " +
                        std::to_string(rank_of(group.front())) + " (ranks issue " + name +
                        "'s collectives in different orders: hang)");
        }
        group.push_back(cur);
      }
      out.groups.push_back(std::move(group));
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
      if (at(list[k]).bytes != at(peer).bytes)
        problem(rank_of(list[k]), static_cast<long>(list[k].op),
                "send of " + std::to_string(at(list[k]).bytes) + " bytes meets a recv of " +
                    std::to_string(at(peer).bytes) + " bytes on rank " +
                    std::to_string(rank_of(peer)));
      out.groups.push_back({list[k], peer});
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
