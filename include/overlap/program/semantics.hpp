#pragma once
/// @file
/// What a step program means, in one place: every backend (verifier, simulator, lower bound, CUDA
/// executor) reads programs through this header and keeps no rules of its own.
///
/// - Structure (`structure_problems`): the indices an op names exist, its kind fits its type, a
///   wait (and an event's host sync) follows a record of its event, a group's members are consecutive communication ops
///   on one stream, sizes are finite and not negative, a GEMM shape is in range (`gemm_shape::valid`), key coordinates
///   are -1 or more and a slot names a TP GEMM.
/// - Order on one rank (`rank_order`): an op follows the previous op of its stream and, for
///   communication, the previous op of its communicator (stream FIFO, communicator FIFO); a wait
///   follows the latest record of its event before it; everything after a host sync follows it,
///   and the sync follows everything before it (an event's sync: that event's latest record, as a
///   wait does; cudaEventSynchronize). The members of an NCCL group start together: they
///   share the predecessors their group had when it started, and whatever follows the group on a
///   stream or communicator follows every member (a member completes with its own partner).
/// - Across ranks (`match_rendezvous`, rendezvous.hpp): the k-th collective of a communicator on
///   each member meets the others; the n-th send from a to b meets the n-th recv on b from a.
/// - Placement (`crosses_nodes`): whether an op's transfer leaves the node.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/rendezvous.hpp>

namespace overlap::schedule {

/// Which structural rule an op breaks; backends map it to their own wording or error id.
enum class structure_rule : std::uint8_t {
  kind,        ///< op kind, collective or type out of range, or a type run as another kind
  stream,      ///< stream index out of range
  comm,        ///< communicator index out of range, or this rank not a member
  peer,        ///< send/recv peer not another rank of the communicator
  event,       ///< event index out of range
  wait_order,  ///< a wait before any record of its event
  group,       ///< group members not consecutive, not on one stream, or not communication
  buffer,      ///< buffer index out of range, or more buffer sizes than buffers
  size,        ///< negative or non-finite bytes or flops (or buffer sizes), or a GEMM shape out of range
  key          ///< a key coordinate below -1, or a slot that is not a TP GEMM
};

struct structure_problem {
  int op = -1;  ///< -1: the program as a whole
  structure_rule rule = structure_rule::kind;
  std::string text;
};

/// The position of `rank` in `c`, or -1.
inline int member_index(const communicator& c, int rank) {
  for (std::size_t i = 0; i < c.ranks.size(); ++i)
    if (c.ranks[i] == rank) return static_cast<int>(i);
  return -1;
}

/// A pass over a program's ops streams more memory than the caches hold: it asks for the op
/// `prefetch_distance` ahead of the one it reads, which then arrives while it works.
inline constexpr std::size_t prefetch_distance = 8;
inline void prefetch_ahead(const std::vector<op>& ops, std::size_t i) {
  if (i + prefetch_distance >= ops.size()) return;
  const char* const at = reinterpret_cast<const char*>(&ops[i + prefetch_distance]);
  for (std::size_t byte = 0; byte < sizeof(op); byte += 64) __builtin_prefetch(at + byte);
  __builtin_prefetch(at + sizeof(op) - 1);
}

/// A value per event of a program (0 .. num_events - 1), `absent` until set. num_events is only a
/// bound, and a program may declare far more events than it has ops: the events below a bound
/// from its op count are a flat array, any others a map, so a huge num_events costs no memory.
template <class T>
class event_table {
 public:
  event_table(std::size_t events, std::size_t ops, T absent)
      : dense_(std::min(events, 2 * ops + 64), absent), absent_(absent) {}
  T operator[](std::size_t e) const {
    if (e < dense_.size()) return dense_[e];
    const auto it = sparse_.find(e);
    return it == sparse_.end() ? absent_ : it->second;
  }
  void set(std::size_t e, T v) {
    if (e < dense_.size())
      dense_[e] = v;
    else
      sparse_[e] = v;
  }

 private:
  std::vector<T> dense_;
  std::unordered_map<std::size_t, T> sparse_;
  T absent_;
};

/// Whether op `i` of `ops` is a later member of the NCCL group of the op before it.
inline bool continues_group(const std::vector<op>& ops, std::size_t i) {
  return i > 0 && ops[i].group >= 0 && ops[i - 1].group == ops[i].group;
}

/// The structural rules, applied op by op in issue order (an op's check reads what the ops before
/// it left: the events recorded, the groups started). `structure_problems` runs it over a whole
/// program; a backend that makes a pass of its own over the ops runs it inside that pass
/// (`rank_order`'s visitor), so that a large program is streamed through the caches once.
class structure_check {
 public:
  /// Checks what concerns the program as a whole (its problems come first).
  explicit structure_check(const program& p)
      : p_(p),
        streams_(p.streams.size()),
        buffers_(p.buffers.size()),
        events_(p.num_events < 0 ? 0 : static_cast<std::size_t>(p.num_events)),
        recorded_(events_, p.ops.size(), false),
        position_(p.comms.size()) {
    if (p.num_events < 0) out_.push_back({-1, structure_rule::event, "num_events is " + std::to_string(p.num_events)});
    if (p.buffer_bytes.size() > p.buffers.size())
      out_.push_back({-1, structure_rule::buffer,
                      "buffer_bytes sizes " + std::to_string(p.buffer_bytes.size()) + " buffers of " +
                          std::to_string(p.buffers.size())});
    for (std::size_t b = 0; b < p.buffer_bytes.size(); ++b)
      if (p.buffer_bytes[b] < 0) {
        out_.push_back({-1, structure_rule::size,
                        "buffer " + std::to_string(b) + " has " + std::to_string(p.buffer_bytes[b]) + " bytes"});
        break;
      }
    for (std::size_t c = 0; c < p.comms.size(); ++c) position_[c] = member_index(p.comms[c], p.rank);
  }

  /// Checks op `i`, every op before it having been checked in order; false when it has a problem.
  bool accepts(std::size_t i) {
    const op& o = p_.ops[i];
    if (plainly_fine(o)) [[likely]] {
      if (o.kind == op_kind::record) recorded_.set(static_cast<std::size_t>(o.event), true);
      return true;
    }
    return explain(i);
  }

  /// Checks op `i` as `accepts` does, rule by rule with no quick test first: what `accepts` runs
  /// for an op its quick test does not pass (and what a test holds the quick test against).
  [[gnu::noinline]] bool explain(std::size_t i) {
    const std::size_t before = out_.size();
    const op& o = p_.ops[i];
    if (static_cast<unsigned>(o.kind) > static_cast<unsigned>(op_kind::host_sync)) {
      bad(i, structure_rule::kind, "op kind " + std::to_string(static_cast<int>(o.kind)) + " does not exist");
      return false;
    }
    if (!is_valid(o.key.type)) {
      bad(i, structure_rule::kind, "op type " + std::to_string(static_cast<int>(o.key.type)) + " does not exist");
      return false;
    }
    if (!is_valid(o.key.slot)) {
      bad(i, structure_rule::key, "slot " + std::to_string(static_cast<int>(o.key.slot)) + " is no op type");
      return false;
    }
    if (o.key.slot != op_type::none && !is_tp_gemm(o.key.slot))
      bad(i, structure_rule::key,
          "slot " + std::string(to_string(o.key.slot)) +
              " is not a GEMM of a TP layer (qkv, proj, fc1, fc2, mtp_proj)");
    if (static_cast<unsigned>(o.format) > static_cast<unsigned>(gemm_format::fp4))
      bad(i, structure_rule::kind, "gemm format " + std::to_string(static_cast<int>(o.format)) + " does not exist");
    for (const auto& f : detail::key_fields)
      if (o.key.at.*f.member < -1)
        bad(i, structure_rule::key,
            "key coordinate " + std::string(f.prefix) + " is " + std::to_string(o.key.at.*f.member) +
                "; a coordinate is >= 0, or -1 where it does not apply");
    if (o.key.type != op_type::none && kind_of(o.key.type) != o.kind)
      bad(i, structure_rule::kind,
          std::string(to_string(o.key.type)) + " runs as " + std::string(to_string(kind_of(o.key.type))) + ", not as " +
              std::string(to_string(o.kind)));
    if (o.kind == op_kind::collective && static_cast<unsigned>(o.coll) > static_cast<unsigned>(collective::all_to_all))
      bad(i, structure_rule::kind, "collective " + std::to_string(static_cast<int>(o.coll)) + " does not exist");
    if (o.kind != op_kind::host_sync && !in(o.stream, streams_))
      bad(i, structure_rule::stream, "stream " + std::to_string(o.stream) + " does not exist");
    if (o.bytes < 0 || o.memory_bytes < 0 || !std::isfinite(o.flops) || o.flops < 0)
      bad(i, structure_rule::size,
          "negative or non-finite size (bytes " + std::to_string(o.bytes) + ", memory bytes " +
              std::to_string(o.memory_bytes) + ", flops " + std::to_string(o.flops) + ")");
    if (!o.gemm.valid())
      bad(i, structure_rule::size,
          "GEMM shape " + std::to_string(o.gemm.m) + " x " + std::to_string(o.gemm.n) + " x " +
              std::to_string(o.gemm.k) + " in " + std::to_string(o.gemm.groups) +
              " group(s): m, n and k are all 0 (none) or all in 1..2^31, groups in 1..2^31");
    if (is_communication(o.kind)) {
      if (!in(o.comm, position_.size())) {
        bad(i, structure_rule::comm, "communicator " + std::to_string(o.comm) + " does not exist");
      } else {
        const communicator& c = p_.comms[static_cast<std::size_t>(o.comm)];
        if (position_[static_cast<std::size_t>(o.comm)] < 0)
          bad(i, structure_rule::comm,
              "rank " + std::to_string(p_.rank) + " is not a member of communicator " + c.name);
        else if (o.kind != op_kind::collective &&
                 (!in(o.peer, c.ranks.size()) || c.ranks[static_cast<std::size_t>(o.peer)] == p_.rank))
          bad(i, structure_rule::peer, "peer " + std::to_string(o.peer) + " is not another rank of " + c.name);
      }
    }
    // A host sync waits for every stream (event -1) or for one event, as a wait does.
    if (o.kind == op_kind::record || o.kind == op_kind::wait || (o.kind == op_kind::host_sync && o.event != -1)) {
      if (!in(o.event, events_)) {
        bad(i, structure_rule::event, "event " + std::to_string(o.event) + " does not exist");
      } else if (o.kind == op_kind::record) {
        recorded_.set(static_cast<std::size_t>(o.event), true);
      } else if (!recorded_[static_cast<std::size_t>(o.event)]) {
        bad(i, structure_rule::wait_order,
            "waits for event " + std::to_string(o.event) +
                " before any record of it (the wait would not order anything)");
      }
    }
    if (o.group >= 0) {
      const bool continues = continues_group(p_.ops, i);
      if (!is_communication(o.kind))
        bad(i, structure_rule::group, "only communication ops can be grouped");
      else if (continues && p_.ops[i - 1].stream != o.stream)
        bad(i, structure_rule::group, "a group's ops must be on one stream");
      // A group that starts here must not have appeared before.
      if (!continues && !started_groups_.insert(o.group).second)
        bad(i, structure_rule::group, "a group's ops must be consecutive in issue order");
    }
    for (const auto* list : {&o.reads, &o.writes})
      for (const int b : *list)
        if (!in(b, buffers_)) bad(i, structure_rule::buffer, "buffer " + std::to_string(b) + " does not exist");
    return out_.size() == before;
  }

  /// The problems found so far, the program's own first, then op by op.
  const std::vector<structure_problem>& problems() const& { return out_; }
  std::vector<structure_problem> problems() && { return std::move(out_); }

 private:
  static bool in(auto v, std::size_t n) { return v >= 0 && static_cast<std::size_t>(v) < n; }
  static bool all_below(const buffer_list& list, std::size_t n) {
    bool below = true;  // negative indices convert to huge ones
    for (const int b : list) below &= static_cast<std::size_t>(b) < n;
    return below;
  }

  /// A quick test that passes only ops `explain` finds nothing wrong with (an op in an NCCL group
  /// is left to it): what nearly every op of a large program takes, with no text made and no
  /// branch per rule. Its one effect, an event's record, is `accepts`'s.
  bool plainly_fine(const op& o) const {
    if (static_cast<unsigned>(o.kind) > static_cast<unsigned>(op_kind::host_sync) || !is_valid(o.key.type) ||
        !is_valid(o.key.slot) || o.group >= 0)
      return false;
    // Coordinates of -1 or more: each + 1 (unsigned) below 2^31 (INT_MAX fails here and is left to
    // `explain`, which accepts it). A GEMM shape all 0 or all positive, every side and groups - 1
    // below 2^31 (2^31 itself is left to `explain` too).
    const location& at = o.key.at;
    const auto up = [](int v) { return static_cast<unsigned>(v) + 1u; };
    const bool coordinates =
        (up(at.layer) | up(at.micro_batch) | up(at.chunk) | up(at.bucket) | up(at.split)) < 0x80000000u;
    const gemm_shape& g = o.gemm;
    const bool shape =
        ((g.m | g.n | g.k) == 0 || (g.m > 0 && g.n > 0 && g.k > 0)) &&
        (static_cast<std::uint64_t>(g.m) | static_cast<std::uint64_t>(g.n) | static_cast<std::uint64_t>(g.k) |
         static_cast<std::uint64_t>(g.groups - 1)) < (std::uint64_t{1} << 31);
    bool fine = (o.key.type == op_type::none || kind_of(o.key.type) == o.kind) && (o.bytes | o.memory_bytes) >= 0 &&
                o.flops >= 0 && o.flops < std::numeric_limits<double>::infinity() &&  // NaN fails both
                shape && coordinates && (o.key.slot == op_type::none || is_tp_gemm(o.key.slot)) &&
                static_cast<unsigned>(o.format) <= static_cast<unsigned>(gemm_format::fp4) &&
                all_below(o.reads, buffers_) && all_below(o.writes, buffers_);
    if (o.kind != op_kind::host_sync) fine = fine && in(o.stream, streams_);
    switch (o.kind) {
      case op_kind::compute: return fine;
      case op_kind::collective:
        return fine && static_cast<unsigned>(o.coll) <= static_cast<unsigned>(collective::all_to_all) &&
               in(o.comm, position_.size()) && position_[static_cast<std::size_t>(o.comm)] >= 0;
      case op_kind::send:
      case op_kind::recv: {
        if (!fine || !in(o.comm, position_.size()) || position_[static_cast<std::size_t>(o.comm)] < 0) return false;
        const communicator& c = p_.comms[static_cast<std::size_t>(o.comm)];
        return in(o.peer, c.ranks.size()) && c.ranks[static_cast<std::size_t>(o.peer)] != p_.rank;
      }
      case op_kind::record: return fine && in(o.event, events_);
      case op_kind::wait: return fine && in(o.event, events_) && recorded_[static_cast<std::size_t>(o.event)];
      case op_kind::host_sync:
        return fine && (o.event == -1 || (in(o.event, events_) && recorded_[static_cast<std::size_t>(o.event)]));
    }
    return false;
  }

  void bad(std::size_t i, structure_rule rule, std::string why) {
    out_.push_back({static_cast<int>(i), rule, std::move(why)});
  }

  const program& p_;
  std::size_t streams_, buffers_;  ///< p_'s counts, read for every op
  std::size_t events_;
  event_table<bool> recorded_;
  std::unordered_set<int> started_groups_;
  std::vector<int> position_;  ///< this rank's place in each communicator (one per communicator), or -1
  std::vector<structure_problem> out_;
};

/// Every structural problem of `p`; empty when each op can be read as the model says.
inline std::vector<structure_problem> structure_problems(const program& p) {
  structure_check check(p);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    prefetch_ahead(p.ops, i);
    check.accepts(i);
  }
  return std::move(check).problems();
}

/// The order of one rank's ops (a program that `structure_problems` accepts): each op's
/// predecessors on the rank, all earlier in issue order, and each op's NCCL group as a range.
/// Op indices are 32-bit (a program of 2^32 - 1 ops or predecessor links or more is refused):
/// half the memory a pass over a large program's order streams.
class rank_order {
 public:
  using index = std::uint32_t;

  explicit rank_order(const program& p) : rank_order(p, [](std::size_t) {}) {}

  /// The same, calling `visit(i)` for each op in issue order just before it is ordered: a
  /// backend's own work on each op in the same pass over them. A visitor that checks the op
  /// (`structure_check`) and throws on a problem stops the order before it reads that op.
  template <class Visit>
  rank_order(const program& p, Visit&& visit) {
    const std::size_t n = p.ops.size();
    if (n >= std::numeric_limits<index>::max())
      throw std::length_error("rank_order: rank " + std::to_string(p.rank) + " has " + std::to_string(n) +
                              " ops; op indices are 32-bit");
    first_.resize(n);
    last_.resize(n);
    preds_.reserve(2 * n);  // most ops follow one op of their stream and one of their communicator

    std::vector<fifo> streams(p.streams.size()), comms(p.comms.size());
    event_table<long> last_record(static_cast<std::size_t>(std::max(p.num_events, 0)), n, -1);
    long last_sync = -1;
    offsets_.reserve(n + 1);
    offsets_.push_back(0);
    // One pass over the ops (a program's ops outgrow the caches): op i's group range as it goes
    // (a group's last member is known when the next op does not continue it), its predecessors
    // appended to preds_ as they are found and sorted in place by close().
    for (std::size_t at = 0; at < n; ++at) {
      prefetch_ahead(p.ops, at);
      visit(at);
      const op& o = p.ops[at];
      const auto i = static_cast<index>(at);
      const bool continues = continues_group(p.ops, at);
      first_[at] = continues ? first_[at - 1] : i;
      if (!continues && at > 0) close_group(i - 1);
      if (last_sync >= 0) preds_.push_back(static_cast<index>(last_sync));
      if (o.kind == op_kind::host_sync) {
        // Every op issued before it, or the latest record of its event (the ops issued after it
        // follow it: the host issues them once it returns).
        if (o.event < 0)
          for (index j = last_sync < 0 ? 0 : static_cast<index>(last_sync) + 1; j < i; ++j) preds_.push_back(j);
        else if (last_record[static_cast<std::size_t>(o.event)] >= 0)
          preds_.push_back(static_cast<index>(last_record[static_cast<std::size_t>(o.event)]));
        last_sync = static_cast<long>(at);
        close();
        continue;
      }
      const bool grouped = o.group >= 0;
      streams[static_cast<std::size_t>(o.stream)].take(i, first_[at], grouped, preds_);
      if (is_communication(o.kind)) comms[static_cast<std::size_t>(o.comm)].take(i, first_[at], grouped, preds_);
      if (o.kind == op_kind::record) last_record.set(static_cast<std::size_t>(o.event), static_cast<long>(at));
      if (o.kind == op_kind::wait && last_record[static_cast<std::size_t>(o.event)] >= 0)
        preds_.push_back(static_cast<index>(last_record[static_cast<std::size_t>(o.event)]));
      close();
    }
    if (n > 0) close_group(static_cast<index>(n - 1));
  }

  std::size_t size() const { return first_.size(); }
  /// The ops op `i` must wait for on its rank, in issue order, each once.
  std::span<const index> predecessors(std::size_t i) const {
    return {preds_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]};
  }
  /// Each op's successors on the rank (the ops that list it as a predecessor), in issue order:
  /// op i's are to[begin[i] .. begin[i + 1]). Written into the caller's vectors, whose storage a
  /// caller that sets up many programs keeps.
  void successors(std::vector<index>& begin, std::vector<index>& to) const {
    const std::size_t n = size();
    begin.assign(n + 1, 0);
    for (const index j : preds_) ++begin[j + 1];
    for (std::size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    to.resize(begin[n]);
    // begin[j] serves as op j's cursor, which ends where op j + 1's list starts; then back.
    for (std::size_t i = 0; i < n; ++i)
      for (const index j : predecessors(i)) to[begin[j]++] = static_cast<index>(i);
    for (std::size_t i = n; i > 0; --i) begin[i] = begin[i - 1];
    begin[0] = 0;
  }
  /// The first and last member of op `i`'s NCCL group (`i` itself when it is not grouped).
  std::size_t group_first(std::size_t i) const { return first_[i]; }
  std::size_t group_last(std::size_t i) const { return last_[i]; }

 private:
  /// The order of one stream or communicator: what its next op follows (one op, or all members
  /// of the group it last took), and what a group's later members follow (taken at its start).
  struct fifo {
    std::vector<index> after, at_group_start;
    index group = std::numeric_limits<index>::max();  ///< the first member of the last op's group
    void take(index i, index group_first, bool grouped, std::vector<index>& preds) {
      if (!grouped && after.size() == 1) [[likely]] {  // alone, after one op (most ops): in place
        preds.push_back(after[0]);
        after[0] = i;
        group = i;  // at_group_start is read only for a later member of a group that starts at `group`
        return;
      }
      take_in_group(i, group_first, preds);
    }
    /// `take` for a grouped op, or after a group: out of line, so that the usual op's path is short.
    [[gnu::noinline]] void take_in_group(index i, index group_first, std::vector<index>& preds) {
      if (group_first != i && group == group_first) {  // a later member of the group it last took
        for (const index x : at_group_start) preds.push_back(x);
        after.push_back(i);
        return;
      }
      for (const index x : after) preds.push_back(x);  // one or a few: cheaper than a range insert
      at_group_start.swap(after);                      // keeps both vectors' storage: no allocation per op
      after.clear();
      after.push_back(i);
      group = group_first;
    }
  };
  /// Op `last` ends its group (or is alone): the group's members learn their last.
  void close_group(index last) {
    for (std::size_t j = first_[last]; j <= last; ++j) last_[j] = last;
  }
  /// Sorts the op's predecessors (preds_ from its offset on) and drops repeats.
  void close() {
    if (preds_.size() - offsets_.back() > 1) sort_last();
    if (preds_.size() >= std::numeric_limits<index>::max()) [[unlikely]]
      throw std::length_error("rank_order: " + std::to_string(preds_.size()) +
                              " predecessor links on one rank; they are indexed in 32 bits");
    offsets_.push_back(static_cast<index>(preds_.size()));
  }
  /// close()'s sort for an op with two predecessors or more (out of line, as take_in_group).
  [[gnu::noinline]] void sort_last() {
    const auto first = preds_.begin() + static_cast<std::ptrdiff_t>(offsets_.back());
    if (preds_.end() - first <= 8) {  // the usual few: an insertion sort, not a call into std::sort
      for (auto a = first + 1; a != preds_.end(); ++a)
        for (auto b = a; b != first && *(b - 1) > *b; --b) std::swap(*(b - 1), *b);
    } else {
      std::sort(first, preds_.end());
    }
    preds_.erase(std::unique(first, preds_.end()), preds_.end());
  }

  std::vector<index> first_, last_;
  std::vector<index> offsets_, preds_;
};

/// The node of a global rank with `gpus_per_node` GPUs per node.
constexpr int node_of(int rank, int gpus_per_node) { return gpus_per_node > 0 ? rank / gpus_per_node : 0; }

/// How many of the peers communication op `o` of program `p` exchanges data with sit on another
/// node: the other members of a collective's communicator, or a send/recv's peer.
inline int off_node_peers(const program& p, const op& o, int gpus_per_node) {
  const auto& members = p.comms[static_cast<std::size_t>(o.comm)].ranks;
  const int home = node_of(p.rank, gpus_per_node);
  if (o.kind != op_kind::collective) return node_of(members[static_cast<std::size_t>(o.peer)], gpus_per_node) != home;
  int off = 0;
  for (const int r : members) off += node_of(r, gpus_per_node) != home;
  return off;
}

/// Whether communication op `o` of program `p` moves data off the node: a collective when any
/// member of its communicator sits on another node, a send/recv when its peer does.
inline bool crosses_nodes(const program& p, const op& o, int gpus_per_node) {
  return off_node_peers(p, o, gpus_per_node) > 0;
}

}  // namespace overlap::schedule
