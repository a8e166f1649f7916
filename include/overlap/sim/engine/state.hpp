#pragma once
/// @file
/// The event loop's state (see sim/simulate.hpp): what it keeps of each op and each rank, and the
/// context its parts share: the step, the machine model, the options and the event queue.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/sim/cost/cost_model.hpp>
#include <overlap/sim/engine/large_array.hpp>
#include <overlap/sim/engine/timer_queue.hpp>

namespace overlap::sim {

struct options;

namespace detail {

inline constexpr double never = std::numeric_limits<double>::infinity();

enum class state : unsigned char { pending, issued, launched, running, done };

/// A compute op running now: its SMs, the share of its work done by `since`, its duration on its
/// current SMs alone (`alone`: when they change, the rest takes what the cost model says for the
/// new count) and beside the rank's communication (`duration`: `alone` times rank_state::pace),
/// and the time of one of its waves on them (0: not in waves; below 0: not asked for yet, as only
/// a communication kernel looking for SMs needs it).
struct computing {
  std::size_t op = 0;
  int sms = 0;
  double done = 0, since = 0, alone = 0, duration = 0, wave = -1;
};

/// What the event loop keeps of one op: everything it reads on the op's way through the loop in
/// one record (the ranks advance together, so an op's fields are rarely in cache; one record is
/// one or two cache lines to fetch, where one array per field would be one each).
struct op_state {
  /// Compute: kernel start; comm: transfer start. Before that, from its issue, when the host
  /// issued it (an op is at its queue's head, where only that time is asked, before it starts).
  double start = never;
  double end = never;
  /// Compute: its time on all of the GPU's SMs, as the cost model gives it (not checked yet): what
  /// it runs on unless communication kernels hold SMs, asked in the set-up while the op is in cache.
  double whole_us = 0;
  std::int32_t group = -1;    ///< comm: its rendezvous group, or -1
  std::uint32_t waiting = 0;  ///< predecessors (program/semantics.hpp) not done yet
  /// The ops that wait for it: op_arrays::succ[succ_begin .. succ_end) (indices on its rank).
  std::uint32_t succ_begin = 0;
  std::uint32_t succ_end = 0;
  int sms = 0;              ///< comm: the SMs its kernel holds
  std::int32_t stream = 0;  ///< the program's, for the result
  std::uint16_t queue = 0;  ///< its hardware queue
  schedule::op_kind kind = schedule::op_kind::compute;
  schedule::family family = schedule::family::none;
  state now = state::pending;
};

/// One hardware queue of a rank: its ops are queue_ops[next .. end), the head at `next`.
struct hardware_queue {
  std::uint32_t next = 0, end = 0;
  /// Whether its head may have become able to start since it was last looked at (it was issued,
  /// its last predecessor finished, SMs freed up, or a wake-up came): only those heads are looked
  /// at, not every head on every event.
  bool examine = false;
};

/// The per-op arrays of every rank, one array each, rank after rank: a rank's are slices of them.
/// One allocation each, not one per rank: large enough for huge pages (large_array.hpp), and a
/// workspace keeps them whole.
struct op_arrays {
  large_vector<op_state> ops;
  large_vector<std::uint32_t> succ;       ///< each op's successors (`rank_order::successors`), op after op
  large_vector<std::uint32_t> queue_ops;  ///< each rank's hardware queues' ops (see rank_state)
  /// Per rank, its communication ops in issue order (what the rendezvous are matched from).
  std::vector<std::vector<std::uint32_t>> communication;
  void clear(std::size_t ranks) {
    ops.clear();
    succ.clear();
    queue_ops.clear();
    communication.resize(ranks);
    for (auto& list : communication) list.clear();
  }
};

/// One rank's state.
struct rank_state {
  std::span<op_state> ops;  ///< in issue order
  /// The hardware queues' ops in issue order, queue after queue (indices on the rank).
  std::span<std::uint32_t> queue_ops;
  std::vector<hardware_queue> queues;
  std::size_t examining = 0;             ///< queues whose `examine` is set
  std::vector<std::size_t> sm_waiters;   ///< queues whose head waits for SMs
  std::vector<computing> running;        ///< compute ops now running, in start order
  std::vector<std::size_t> queue_order;  ///< hardware queues in dispatch order
  bool fixed_order = true;               ///< one stream per queue: the order never changes, it is sorted once
  std::size_t next_issue = 0;
  double host_time = 0;
  int free_sms = 0;
  int busy_sms = 0;  ///< held by running compute ops
  /// How much longer its compute kernels take beside the transfers in flight on its links than
  /// alone (1: no communication moves; see sm_pool::pace).
  double pace = 1;
  /// `busy_sms` when the transfers of the rank were last given their caps (rendezvous::recap).
  int capped_busy_sms = 0;
  /// Communication ops launched and not done: while there are none, no other rank can change
  /// this one's state, so it runs ahead on its own (see event_loop.hpp).
  std::uint32_t comm_active = 0;
  bool ahead = false;      ///< running ahead: its timers are `running`'s ends and `wake_at`
  double wake_at = never;  ///< its wake-up while running ahead
  /// It stopped running ahead before launching a communication op: its dispatch goes on from
  /// queue_order[resume_index] (that queue to be looked at again), with `progressed` as it was,
  /// once the other ranks have reached that time.
  bool suspended = false;
  bool resume_progressed = false;
  std::size_t resume_index = 0;

  /// Hardware queue q's head is to be looked at.
  void examine(std::size_t q) {
    examining += !queues[q].examine;
    queues[q].examine = true;
  }
  /// A wake-up: every head is looked at.
  void examine_all() {
    for (std::size_t q = 0; q < queues.size(); ++q) examine(q);
  }
  /// Hardware queue q's head waits for SMs: it is looked at again when they change.
  void wait_for_sms(std::size_t q) {
    for (const std::size_t w : sm_waiters)
      if (w == q) return;
    sm_waiters.push_back(q);
  }
  /// The rank's SMs changed (some freed, or a kernel started whose SMs a communication kernel
  /// can take): the heads that wait for SMs are looked at again.
  void sms_changed() {
    for (const std::size_t q : sm_waiters) examine(q);
    sm_waiters.clear();
  }
  std::uint32_t head_op(std::size_t q) const { return queue_ops[queues[q].next]; }
  /// Whether queue q has an issued op at its head.
  bool has_head(std::size_t q) const { return queues[q].next < queues[q].end && ops[head_op(q)].now != state::pending; }
};

/// `rs` emptied for another program, keeping its vectors' storage.
inline void recycle(rank_state& rs) {
  rank_state fresh;  // every other field as a new one has it
  const auto keep = [](auto& from, auto& to) {
    to.swap(from);
    to.clear();
  };
  keep(rs.queues, fresh.queues);
  keep(rs.sm_waiters, fresh.sm_waiters);
  keep(rs.running, fresh.running);
  keep(rs.queue_order, fresh.queue_order);
  rs = std::move(fresh);
}

/// A cost model gave op `i` of `p` a time that is not finite and >= 0.
[[noreturn]] inline void bad_cost(const schedule::program& p, std::size_t i, double us) {
  throw std::invalid_argument("simulate: the cost model gives rank " + std::to_string(p.rank) + " op " +
                              std::to_string(i) + " (" + schedule::display_name(p.ops[i]) + ") " + std::to_string(us) +
                              " us; a cost must be finite and >= 0");
}

/// What the event loop's parts share: the step and its model, the ranks' state and the event
/// queue, with the timers' layout: a compute op's end (its rank's `timer_base` + op), a
/// transfer's end (`group_timers` + group), a rank's wake-up (`wake_timers` + rank: the host's
/// issue of a queue head comes due, or a GEMM's wave ends) and a suspended rank's resumption
/// (`resume_timers` + rank: see event_loop::run_ahead). A rank running ahead keeps its own instead.
struct step_context {
  const std::vector<schedule::program>& programs;
  const cost_model& cost;
  const machine& m;
  const options& opt;
  std::vector<rank_state>& ranks;
  op_arrays& arrays;
  timer_queue& timers;
  std::vector<std::size_t> timer_base;  ///< per rank, the timer id of its op 0
  std::size_t total_ops = 0, groups = 0;
  std::size_t group_timers = 0, wake_timers = 0, resume_timers = 0;

  /// Events of one time run in (rank, op) order, a rank's wake-up after its ops.
  static constexpr std::size_t wake = std::numeric_limits<std::uint32_t>::max();
  static std::uint64_t order_of(std::size_t pi, std::size_t i) { return std::uint64_t{pi} << 32 | i; }

  /// A cost must be a finite time: NaN would stall the event loop, a negative one run time back.
  double checked(double us, std::size_t pi, std::size_t i) const {
    if (!(us >= 0 && us < never)) [[unlikely]]  // NaN fails both
      bad_cost(programs[pi], i, us);
    return us;
  }
  /// Rank pi looks at its queue heads again at `at` (or earlier, if set so).
  void wake_up(std::size_t pi, double at) {
    if (ranks[pi].ahead)
      ranks[pi].wake_at = std::min(ranks[pi].wake_at, at);
    else
      timers.set_earlier(wake_timers + pi, at, order_of(pi, wake));
  }
  /// Compute op i of rank pi now ends at ranks[pi].ops[i].end.
  void ends_at(std::size_t pi, std::size_t i) {
    if (!ranks[pi].ahead) timers.set(timer_base[pi] + i, ranks[pi].ops[i].end, order_of(pi, i));
  }
  /// Op i of `rs` is done: its successors have one predecessor fewer to wait for, and the queue of
  /// one that waits for none now has a head to look at.
  void finish(rank_state& rs, std::size_t i) {
    rs.ops[i].now = state::done;
    for (std::uint32_t k = rs.ops[i].succ_begin; k < rs.ops[i].succ_end; ++k) {
      op_state& next = rs.ops[arrays.succ[k]];
      if (--next.waiting == 0 && next.kind != schedule::op_kind::host_sync) rs.examine(next.queue);
    }
  }
};

}  // namespace detail
}  // namespace overlap::sim
