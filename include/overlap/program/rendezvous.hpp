#pragma once
/// @file
/// Matching communication across ranks: the k-th collective of a communicator on every member
/// forms one rendezvous, and so does the n-th send from rank a to rank b with the n-th recv on b
/// from a. The verifier and the simulator both build on this one matching.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
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

/// Rendezvous groups in one flat list: group g's members are the ops that complete together.
/// One allocation for all of them, not one per group (a TP ring exchange makes a send/recv pair
/// per chunk).
class group_list {
 public:
  std::size_t size() const { return begin_.size() - 1; }
  bool empty() const { return size() == 0; }
  std::span<const op_ref> operator[](std::size_t g) const {
    return {members_.data() + begin_[g], begin_[g + 1] - begin_[g]};
  }
  /// Appends a member to the group being built; `close` ends that group (maybe empty).
  void add(op_ref member) { members_.push_back(member); }
  void close() { begin_.push_back(members_.size()); }
  /// The group being built so far.
  std::span<const op_ref> open() const { return {members_.data() + begin_.back(), members_.size() - begin_.back()}; }

  /// Iterates over the groups, each a span of its members.
  class iterator {
   public:
    iterator(const group_list& list, std::size_t g) : list_(&list), g_(g) {}
    std::span<const op_ref> operator*() const { return (*list_)[g_]; }
    iterator& operator++() {
      ++g_;
      return *this;
    }
    bool operator==(const iterator& other) const { return g_ == other.g_; }

   private:
    const group_list* list_;
    std::size_t g_;
  };
  iterator begin() const { return {*this, 0}; }
  iterator end() const { return {*this, size()}; }

 private:
  std::vector<op_ref> members_;
  std::vector<std::size_t> begin_{0};
};

struct rendezvous_set {
  group_list groups;  ///< each: the ops that complete together
  /// Per group: empty when its members agree; else which ranks disagree on what (a kind, a size):
  /// NCCL would hang or corrupt memory, so the group never completes.
  std::vector<std::string> disagreement;
  std::vector<match_problem> problems;  ///< empty when every comm op has its partners
};

/// What makes a step's programs unfit to be matched at all: two programs for one rank, a
/// negative rank, a communicator that lists a rank twice, and a communicator name whose member
/// list differs between the programs that hold it (NCCL would build two different groups, or
/// none). Empty for a well-formed step.
inline std::vector<match_problem> step_problems(const std::vector<program>& programs) {
  std::vector<match_problem> out;
  std::map<int, std::size_t> seen;                                       // rank -> program index
  std::map<std::string, std::pair<int, const std::vector<int>*>> first;  // name -> (rank, members)
  const auto list = [](const std::vector<int>& ranks) {
    std::string text = "{";
    // Appended in two steps: g++ 12 at -O3 warns falsely (-Wrestrict) on "literal" + string&&.
    for (std::size_t i = 0; i < ranks.size(); ++i) (text += i ? "," : "") += std::to_string(ranks[i]);
    return text + "}";
  };
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const program& p = programs[pi];
    if (p.rank < 0)
      out.push_back({p.rank, -1, "rank " + std::to_string(p.rank) + " is negative"});
    else if (!seen.emplace(p.rank, pi).second)
      out.push_back({p.rank, -1,
                     "two programs for rank " + std::to_string(p.rank) + " (programs " + std::to_string(seen[p.rank]) +
                         " and " + std::to_string(pi) + ")"});
    for (const communicator& c : p.comms) {
      std::vector<int> sorted = c.ranks;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
        out.push_back({p.rank, -1, "communicator " + c.name + " lists a rank twice: " + list(c.ranks)});
      const auto [it, fresh] = first.emplace(c.name, std::pair{p.rank, &c.ranks});
      if (!fresh && *it->second.second != c.ranks)
        out.push_back({p.rank, -1,
                       "communicator " + c.name + " has members " + list(c.ranks) + " here but " +
                           list(*it->second.second) + " on rank " + std::to_string(it->second.first) +
                           " (one name, one group: NCCL would hang or mix up ranks)"});
    }
  }
  return out;
}

/// How `match_rendezvous` reports what it cannot match.
struct match_options {
  /// Spell out `problems`; without it they stay empty: the groups and their disagreements are
  /// all a simulation needs.
  bool explain = true;
  /// The step holds class representatives (program/rank_classes.hpp, whose `class_problems` the
  /// caller checks): a communicator's member without a program is absent by design, stood for by
  /// its representative, and a collective missing there is no problem. A group then holds its
  /// present members.
  bool absent_by_design = false;
  /// When set, each program's communication ops (indices in issue order, one list per program),
  /// as a caller that has made its own pass over the ops found them: matching then reads those
  /// ops alone, not every op of the step. Not owned.
  const std::vector<std::vector<std::uint32_t>>* communication = nullptr;
};

namespace detail {

/// A communication op as the matching reads it: where it is, and what its partners must agree on,
/// copied while its program's ops are read in order (a step's ops outgrow the caches: read again
/// member by member, each would be a miss).
struct taken_op {
  op_ref ref;
  std::int64_t bytes;
  collective coll;
  bool in_order;  ///< a collective: its sequence number is its place among its rank's on its communicator
};

/// `match_rendezvous` step by step: the communicators numbered, each program's communication ops
/// taken onto per-communicator lists, then the collectives matched position by position and each
/// send with its recv. One matching per matcher.
class rendezvous_matcher {
 public:
  rendezvous_matcher(const std::vector<program>& programs, match_options how) : programs_(programs), how_(how) {
    if (how.communication && how.communication->size() != programs.size())
      throw std::invalid_argument("match_rendezvous: " + std::to_string(how.communication->size()) +
                                  " lists of communication ops for " + std::to_string(programs.size()) + " programs");
    if (how.absent_by_design) {
      for (const program& p : programs) present_.push_back(p.rank);
      std::sort(present_.begin(), present_.end());
    }
  }

  rendezvous_set match() && {
    number_communicators();
    for (std::size_t pi = 0; pi < programs_.size(); ++pi) take_program(pi);
    for (std::size_t number = 0; number < names_.size(); ++number) match_collectives(number);
    match_sends();
    report_unmatched_recvs();
    return std::move(out_);
  }

 private:
  /// A rank without a program in a step of class representatives: absent by design.
  bool absent(int rank) const {
    return how_.absent_by_design && !std::binary_search(present_.begin(), present_.end(), rank);
  }
  int rank_of(const taken_op& t) const { return programs_[t.ref.program].rank; }
  /// A problem of `rank` at op `op_index` (-1: none); `why` makes the text only when it is wanted.
  template <class Why>
  void problem(int rank, long op_index, const Why& why) {
    if (how_.explain) out_.problems.push_back({rank, static_cast<int>(op_index), why()});
  }

  /// Communicator names, numbered in name order once per program and communicator (not compared
  /// as strings per op): the groups come out in the order of the names, as the maps below sort.
  void number_communicators() {
    for (const program& p : programs_)
      for (const communicator& c : p.comms) numbered_.emplace(c.name, 0);
    names_.reserve(numbered_.size());
    for (auto& [name, number] : numbered_) {
      number = static_cast<int>(names_.size());
      names_.push_back(name);
    }
    members_.resize(names_.size());
    seen_.assign(names_.size(), 0);
    collectives_.resize(names_.size());
  }

  /// Program `pi`'s communication ops onto the lists: those the caller listed, or every one.
  /// Each communicator's list of this rank's collectives and, per peer, of its sends and receives
  /// is looked up once per program, not per op.
  void take_program(std::size_t pi) {
    const program& p = programs_[pi];
    number_of_.resize(p.comms.size());
    for (std::size_t c = 0; c < p.comms.size(); ++c) number_of_[c] = numbered_.find(p.comms[c].name)->second;
    own_.assign(p.comms.size(), nullptr);
    to_.assign(p.comms.size(), {});
    from_.assign(p.comms.size(), {});
    if (how_.communication)
      for (const std::uint32_t i : (*how_.communication)[pi]) take(pi, i);
    else
      for (std::size_t i = 0; i < p.ops.size(); ++i)
        if (is_communication(p.ops[i].kind)) take(pi, i);
  }

  /// Op `i` of program `pi` onto its list: its rank's collectives on its communicator, or the
  /// sends (receives) between its rank and its peer there.
  void take(std::size_t pi, std::size_t i) {
    const program& p = programs_[pi];
    const op& o = p.ops[i];
    const auto comm = static_cast<std::size_t>(o.comm);
    const communicator& c = p.comms[comm];
    const int name = number_of_[comm];
    if (!seen_[static_cast<std::size_t>(name)]) {
      seen_[static_cast<std::size_t>(name)] = 1;
      members_[static_cast<std::size_t>(name)] = c.ranks;
    }
    if (o.kind == op_kind::collective) {
      if (!own_[comm]) own_[comm] = &collectives_[static_cast<std::size_t>(name)][p.rank];
      own_[comm]->push_back({{pi, i}, o.bytes, o.coll, o.seq == static_cast<std::int64_t>(own_[comm]->size())});
      return;
    }
    const bool send = o.kind == op_kind::send;
    auto& lists = send ? to_[comm] : from_[comm];
    lists.resize(c.ranks.size(), nullptr);
    auto& list = lists[static_cast<std::size_t>(o.peer)];
    const int peer = c.ranks[static_cast<std::size_t>(o.peer)];
    if (!list) list = send ? &sends_[{name, p.rank, peer}] : &recvs_[{name, peer, p.rank}];
    list->push_back({{pi, i}, o.bytes, o.coll, true});
  }

  /// The collectives of communicator `number`, a group per position: as many as the most any
  /// member issues.
  void match_collectives(std::size_t number) {
    const std::map<int, std::vector<taken_op>>& by_rank = collectives_[number];
    std::size_t length = 0;
    for (const auto& [rank, list] : by_rank)
      if (list.size() > length) length = list.size();
    member_lists_.clear();
    for (const int r : members_[number]) {
      const auto it = by_rank.find(r);
      member_lists_.push_back(it == by_rank.end() ? nullptr : &it->second);
    }
    for (std::size_t k = 0; k < length; ++k) match_collective(number, k, length);
  }

  /// Collective #k of communicator `number`: each member's k-th, out of order or not, compared
  /// with the group's first; a member that never issues it is a hang (but for one absent by
  /// design).
  void match_collective(std::size_t number, std::size_t k, std::size_t length) {
    const std::string& name = names_[number];
    std::string disagrees;
    const taken_op* first = nullptr;  // the group's first member
    for (std::size_t at = 0; at < members_[number].size(); ++at) {
      const int r = members_[number][at];
      const std::vector<taken_op>* list = member_lists_[at];
      const std::size_t have = list ? list->size() : 0;
      if (k >= have) {
        if (have == 0 && absent(r)) continue;
        problem(r, -1, [&] {
          return "communicator " + name + " has " + std::to_string(have) + " collectives here but " +
                 std::to_string(length) + " on another rank: collective #" + std::to_string(k) +
                 " is never issued (hang)";
        });
        continue;
      }
      const taken_op& cur = (*list)[k];
      if (!cur.in_order)
        problem(r, static_cast<long>(cur.ref.op), [&] {
          return "sequence number " + std::to_string(programs_[cur.ref.program].ops[cur.ref.op].seq) + " on " + name +
                 " where the issue order gives " + std::to_string(k);
        });
      if (first)
        compare_collective(name, k, *first, cur, r, disagrees);
      else
        first = &cur;
      out_.groups.add(cur.ref);
    }
    out_.groups.close();
    out_.disagreement.push_back(std::move(disagrees));
  }

  /// Member `b`, of rank `r`, of collective #k on `name` against the group's first member `a`:
  /// another kind or size is a problem of `r`, and the first such is the group's disagreement.
  void compare_collective(const std::string& name, std::size_t k, const taken_op& a, const taken_op& b, int r,
                          std::string& disagrees) {
    if (a.coll == b.coll && a.bytes == b.bytes) return;
    problem(r, static_cast<long>(b.ref.op), [&] {
      return "collective #" + std::to_string(k) + " on " + name + " is " + std::string(to_string(b.coll)) + " of " +
             std::to_string(b.bytes) + " bytes here but " + std::string(to_string(a.coll)) + " of " +
             std::to_string(a.bytes) + " bytes on rank " + std::to_string(rank_of(a)) + " (ranks issue " + name +
             "'s collectives in different orders: hang)";
    });
    if (disagrees.empty())
      disagrees = "ranks " + std::to_string(rank_of(a)) + " and " + std::to_string(r) + " disagree on collective #" +
                  std::to_string(k) + " of " + name + ": " + std::string(to_string(a.coll)) + " of " +
                  std::to_string(a.bytes) + " bytes vs " + std::string(to_string(b.coll)) + " of " +
                  std::to_string(b.bytes) + " bytes";
  }

  /// Where the recvs matching the sends `key` (communicator, a, b) are: b's from a, or, for a peer
  /// b absent by design, a's own from its peer as far behind a as b is ahead (both absent): a
  /// class's members are the same program up to a rotation of their communicator's positions
  /// (a TP ring: program/rank_classes.hpp), so b's recv from a is a's from that peer turned by
  /// as many places. recvs_.end() when there are none.
  std::map<std::tuple<int, int, int>, std::vector<taken_op>>::iterator recvs_for(const std::tuple<int, int, int>& key) {
    const auto [name, a, b] = key;
    if (!absent(b)) return recvs_.find(key);
    const std::vector<int>& m = members_[static_cast<std::size_t>(name)];
    const auto n = static_cast<long>(m.size());
    const long ia = std::find(m.begin(), m.end(), a) - m.begin(), ib = std::find(m.begin(), m.end(), b) - m.begin();
    const int behind = m[static_cast<std::size_t>(((2 * ia - ib) % n + n) % n)];
    if (!absent(behind)) return recvs_.end();
    const auto it = recvs_.find({name, behind, a});
    if (it != recvs_.end()) turned_.insert(it->first);
    return it;
  }

  /// The n-th send from a to b on a communicator with the n-th recv on b from a; a send left over
  /// is a hang.
  void match_sends() {
    for (const auto& [key, list] : sends_) {
      const std::string& comm = names_[static_cast<std::size_t>(std::get<0>(key))];  // clang 14: no binding in a lambda
      const auto it = recvs_for(key);
      const std::size_t matched = it == recvs_.end() ? 0 : it->second.size();
      for (std::size_t k = 0; k < list.size(); ++k) {
        if (k >= matched) {
          problem(rank_of(list[k]), static_cast<long>(list[k].ref.op),
                  [&] { return "send #" + std::to_string(k) + " on " + comm + " has no matching recv (hang)"; });
          continue;
        }
        pair_send(comm, k, list[k], it->second[k]);
      }
    }
  }

  /// Send #k on `comm` and its recv as one group; sizes that differ are a problem of the sender's
  /// and the group's disagreement.
  void pair_send(const std::string& comm, std::size_t k, const taken_op& send, const taken_op& peer) {
    std::string disagrees;
    if (send.bytes != peer.bytes) {
      disagrees = "send of " + std::to_string(send.bytes) + " bytes meets a recv of " + std::to_string(peer.bytes) +
                  " bytes on rank " + std::to_string(rank_of(peer));
      problem(rank_of(send), static_cast<long>(send.ref.op), [&] { return disagrees; });
      disagrees = "ranks " + std::to_string(rank_of(send)) + " and " + std::to_string(rank_of(peer)) +
                  " disagree on send/recv #" + std::to_string(k) + " on " + comm + ": " + disagrees;
    }
    out_.groups.add(send.ref);
    out_.groups.add(peer.ref);
    out_.groups.close();
    out_.disagreement.push_back(std::move(disagrees));
  }

  /// The recvs beyond the sends that match them: hangs.
  void report_unmatched_recvs() {
    for (const auto& [key, list] : recvs_) {
      const std::string& comm = names_[static_cast<std::size_t>(std::get<0>(key))];
      if (turned_.contains(key)) continue;  // matched with its rank's own sends (recvs_for)
      const auto it = sends_.find(key);
      const std::size_t matched = it == sends_.end() ? 0 : it->second.size();
      for (std::size_t k = matched; k < list.size(); ++k)
        problem(rank_of(list[k]), static_cast<long>(list[k].ref.op),
                [&] { return "recv #" + std::to_string(k) + " on " + comm + " has no matching send (hang)"; });
    }
  }

  const std::vector<program>& programs_;
  const match_options how_;
  rendezvous_set out_;
  std::vector<int> present_;               ///< the ranks with a program, sorted (only with absent_by_design)
  std::map<std::string, int> numbered_;    ///< communicator name -> its number
  std::vector<std::string> names_;         ///< by number
  std::vector<std::vector<int>> members_;  ///< as the first program with an op on it lists them
  std::vector<char> seen_;                 ///< whether `members_` holds the communicator's
  std::vector<std::map<int, std::vector<taken_op>>> collectives_;             ///< communicator -> rank -> ops
  std::map<std::tuple<int, int, int>, std::vector<taken_op>> sends_, recvs_;  ///< (communicator, from, to)
  std::set<std::tuple<int, int, int>> turned_;  ///< recvs matched with their rank's own sends (recvs_for)
  // The program being taken: its communicators' numbers, and their lists of its ops (null: not
  // looked up yet), kept between programs for their memory.
  std::vector<int> number_of_;
  std::vector<std::vector<taken_op>*> own_;
  std::vector<std::vector<std::vector<taken_op>*>> to_, from_;
  std::vector<const std::vector<taken_op>*> member_lists_;  ///< one communicator's, per member (null: none)
};

}  // namespace detail

/// Matches every collective, send and recv of a step (ops must reference valid communicators, and
/// `step_problems` must be empty).
inline rendezvous_set match_rendezvous(const std::vector<program>& programs, match_options how = {}) {
  return detail::rendezvous_matcher(programs, how).match();
}

}  // namespace overlap::schedule
