#pragma once
/// @file
/// The event loop of the simulator (see sim/simulate.hpp): it runs the ranks' dispatch (issuer.hpp)
/// and the events that come due (compute ends, transfer ends, wake-ups) in time order, the events
/// of one time in (rank, op) order. Two fast paths skip the event queue where nothing another
/// rank does can change a rank (`run_ahead`, `hand_over`); `options::fast_paths` turns them off,
/// and the results are the same bit for bit (a test holds them to it).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include <overlap/sim/engine/issuer.hpp>
#include <overlap/sim/engine/rendezvous.hpp>
#include <overlap/sim/engine/sm_pool.hpp>
#include <overlap/sim/engine/state.hpp>

namespace overlap::sim::detail {

class event_loop {
 public:
  /// `fast_paths`: run ranks ahead of the event queue where they can (see run_ahead).
  event_loop(step_context& c, sm_pool& sms, rendezvous& groups, issuer& host, bool unlimited, bool fast_paths)
      : c_(c), sms_(sms), groups_(groups), host_(host), unlimited_(unlimited), fast_paths_(fast_paths) {}

  /// Runs the step to its end, or until nothing can move (a hang: ops are left not done).
  void run() {
    const std::size_t ranks = c_.programs.size();
    // Only ranks that something happened to are dispatched: all of them at the start, then a
    // rank when one of its ops completes or its wake-up comes due.
    dirty_.assign(ranks, 1);
    work_.resize(ranks);
    for (std::size_t pi = 0; pi < ranks; ++pi) work_[pi] = ranks - 1 - pi;
    double t = 0;
    for (;;) {
      while (!work_.empty()) {
        const std::size_t pi = work_.back();
        work_.pop_back();
        dirty_[pi] = 0;
        host_.dispatch(pi, t);
        groups_.recap(pi, t);
        run_ahead(pi, t);
      }
      // The transfers that started, ended or changed rate at `t` set their ranks' compute pace
      // once every rank's events of `t` have run: what the ranks decided at `t` does not depend on
      // the order they ran in (a step of class representatives runs them in another).
      sms_.pace(groups_.links(), t);
      if (c_.timers.empty()) break;
      t = c_.timers.top_time();
      run_due(t);
    }
  }

 private:
  /// Runs what comes due at `t` in (rank, op) order, events that come due while they run
  /// included; the members of a transfer that ends join that order one by one.
  void run_due(double t) {
    for (;;) {
      const bool timer = !c_.timers.empty() && c_.timers.top_time() <= t &&
                         (members_due_.empty() || c_.timers.top_order() < members_due_.top());
      if (!timer && members_due_.empty()) break;
      std::uint64_t order = 0;
      if (timer) {
        const auto fired = c_.timers.pop();
        if (fired.id >= c_.group_timers && fired.id < c_.wake_timers) {
          for (const auto& mem : groups_.members(fired.id - c_.group_timers))
            members_due_.push(step_context::order_of(mem.program, mem.op));
          continue;
        }
        if (fired.id >= c_.resume_timers) {  // a suspended rank goes on
          touch(fired.id - c_.resume_timers);
          continue;
        }
        order = fired.order;
      } else {
        order = members_due_.top();
        members_due_.pop();
      }
      come_due(static_cast<std::size_t>(order >> 32), static_cast<std::size_t>(order & 0xffffffffu), t);
    }
  }

  void touch(std::size_t pi) {
    if (!dirty_[pi]) work_.push_back(pi);
    dirty_[pi] = 1;
  }

  /// What comes due at `t` for rank pi: its op i ends, or (i == wake) its wake-up.
  void come_due(std::size_t pi, std::size_t i, double t) {
    if (i == step_context::wake) {  // a head's issue came due, or a wave ended: every head is looked at
      c_.ranks[pi].examine_all();
      touch(pi);
      return;
    }
    const rank_state& rs = c_.ranks[pi];
    // Skipped: an op whose end moved (its SMs or its links' shares changed) since it came due.
    if (rs.ops[i].now != state::running) return;
    const double end =
        rs.ops[i].group >= 0 ? groups_.links().end_of(static_cast<std::size_t>(rs.ops[i].group)) : rs.ops[i].end;
    if (end != t) return;
    touch(pi);
    complete(pi, i, t);
  }

  /// Op i of rank pi ends at `t` (a compute op, or a member of a transfer that ends).
  void complete(std::size_t pi, std::size_t i, double t) {
    rank_state& rs = c_.ranks[pi];
    rs.ops[i].end = t;
    c_.finish(rs, i);
    if (const long g = rs.ops[i].group; g >= 0) groups_.links().end(static_cast<std::size_t>(g), t);
    if (schedule::is_communication(rs.ops[i].kind)) --rs.comm_active;
    if (unlimited_) return;
    sms_.release(pi, i, t);
  }

  /// A compute chain on rank pi running ahead: its one running op, a compute op, ends before
  /// anything else of the rank is due, and its one successor is a compute op at the head of its
  /// hardware queue, issued by then and waiting for it alone, with nothing else to issue, look at
  /// or give SMs to. Then the end and the successor's start are what complete() and a dispatch
  /// would do (the queue's next op, if issued, waits or is issued later), without the dispatch's
  /// pass over the queues: most of a data-parallel rank's compute. False, changing nothing, when
  /// anything else could happen.
  bool hand_over(std::size_t pi) {
    rank_state& rs = c_.ranks[pi];
    if (rs.running.size() != 1 || rs.examining != 0 || !rs.sm_waiters.empty()) return false;
    const std::size_t i = rs.running.front().op;
    const op_state& s = rs.ops[i];
    const double t = s.end;
    if (!(t < rs.wake_at) || s.succ_end - s.succ_begin != 1 || rs.free_sms + rs.running.front().sms < 1) return false;
    const std::size_t j = c_.arrays.succ[s.succ_begin];
    const op_state& next = rs.ops[j];
    const std::size_t q = next.queue;
    const hardware_queue& hq = rs.queues[q];
    if (next.kind != schedule::op_kind::compute || next.waiting != 1 || next.now != state::issued || next.start > t ||
        hq.next >= hq.end || rs.queue_ops[hq.next] != j)
      return false;
    const op_state* after = hq.next + 1 < hq.end ? &rs.ops[rs.queue_ops[hq.next + 1]] : nullptr;
    if (after && after->now != state::pending && after->start <= t && after->waiting == 0) return false;
    if (rs.next_issue < rs.ops.size() &&
        (rs.ops[rs.next_issue].kind != schedule::op_kind::host_sync || rs.ops[rs.next_issue].waiting == 0))
      return false;
    complete(pi, i, t);  // examines q
    rs.queues[q].examine = false;
    --rs.examining;
    sms_.start_compute(pi, j, t);
    host_.next_head(pi, q);
    if (after && after->now != state::pending && after->start > t) c_.wake_up(pi, after->start);
    return true;
  }

  /// Rank pi was just dispatched and has no communication op launched: nothing another rank does
  /// can change it until it launches one, so it runs on by itself, its ops' ends and wake-up kept
  /// in its state instead of the timer queue, in the order the loop would run them: the events of
  /// one time in op order, its wake-up after them, then its dispatch. It stops before its next
  /// launch (suspended: it goes on when the loop reaches that time, after every rank's earlier
  /// events) or when nothing of its own is due. The order across ranks never changes a result, so
  /// the times are the loop's; what it saves is the queue and the cache misses of interleaving
  /// every rank's events (a data-parallel rank's compute runs mostly like this).
  void run_ahead(std::size_t pi, double t) {
    rank_state& rs = c_.ranks[pi];
    if (!fast_paths_ || unlimited_ || rs.comm_active > 0 || rs.suspended) return;
    sms_.pace(groups_.links(), pi, t);  // its last transfer may have ended at `t`
    rs.ahead = true;
    for (const computing& k : rs.running) c_.timers.remove(c_.timer_base[pi] + k.op);
    if (c_.timers.contains(c_.wake_timers + pi)) {
      rs.wake_at = c_.timers.time_of(c_.wake_timers + pi);
      c_.timers.remove(c_.wake_timers + pi);
    }
    double now = 0;
    for (;;) {
      if (hand_over(pi)) continue;
      now = rs.wake_at;
      for (const computing& k : rs.running) now = std::min(now, rs.ops[k.op].end);
      if (now == never) break;
      for (;;) {  // what comes due at `now`, events that come due while they run included
        std::size_t first = step_context::wake;
        for (const computing& k : rs.running)
          if (rs.ops[k.op].end <= now) first = std::min(first, k.op);
        if (first != step_context::wake) {
          complete(pi, first, now);
          continue;
        }
        if (rs.wake_at <= now) {
          rs.wake_at = never;
          rs.examine_all();
        }
        break;
      }
      host_.dispatch(pi, now);
      if (rs.suspended) break;
    }
    rs.ahead = false;
    for (const computing& k : rs.running) c_.ends_at(pi, k.op);
    if (rs.wake_at < never) c_.wake_up(pi, rs.wake_at);
    rs.wake_at = never;
    if (rs.suspended)  // it goes on at its last dispatch's time
      c_.timers.set(c_.resume_timers + pi, now, step_context::order_of(pi, step_context::wake));
  }

  step_context& c_;
  sm_pool& sms_;
  rendezvous& groups_;
  issuer& host_;
  bool unlimited_, fast_paths_;
  std::vector<char> dirty_;
  std::vector<std::size_t> work_;
  /// The members of transfers that ended at the time being run, in (rank, op) order, merged with
  /// the timers'.
  std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> members_due_;
};

}  // namespace overlap::sim::detail
