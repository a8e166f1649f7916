#pragma once
/// @file
/// The host issuer and the hardware queues of the event loop (see sim/simulate.hpp). A rank's host
/// thread issues its ops in program order, paying the machine's launch cost each (a record's or
/// wait's event cost), and stops at a host sync until what it waits for is done. Streams map
/// round-robin onto the hardware queues; each queue is FIFO across its streams: its head starts
/// when it was issued, its predecessors are done and the SM pool seats it, and an op that cannot
/// start blocks every op behind it in its queue.

#include <algorithm>
#include <cstddef>

#include <overlap/sim/engine/rendezvous.hpp>
#include <overlap/sim/engine/sm_pool.hpp>
#include <overlap/sim/engine/state.hpp>

namespace overlap::sim::detail {

class issuer {
 public:
  /// `unlimited`: no SM contention (options::unlimited_resources).
  issuer(step_context& c, sm_pool& sms, rendezvous& groups, bool unlimited)
      : c_(c),
        sms_(sms),
        groups_(groups),
        unlimited_(unlimited),
        event_us_(c.m.event_us > 0 ? c.m.event_us : c.m.launch_us) {}

  /// Dispatches what rank pi can start at `t`: the host issues until a host sync whose work is
  /// not finished; each hardware queue dispatches its head while the head can start, the queues
  /// whose heads are on higher-priority streams first (the block scheduler serves pending work of
  /// higher-priority streams first when SMs free up). A rank running ahead (rank_state::ahead)
  /// stops before a communication launch, suspended, to go on from there.
  void dispatch(std::size_t pi, double t) {
    rank_state& rs = c_.ranks[pi];
    bool resume = rs.suspended;
    rs.suspended = false;
    for (bool progressed = true; progressed;) {
      std::size_t k = 0;  // into queue_order
      if (resume) {       // the pass it was suspended in goes on
        resume = false;
        progressed = rs.resume_progressed;
        k = rs.resume_index;
      } else {
        progressed = issue(rs, t);
        if (rs.examining == 0) break;  // no head to look at: nothing can start
        if (!rs.fixed_order) order_queues(pi);
      }
      for (; k < rs.queue_order.size(); ++k) {
        const std::size_t q = rs.queue_order[k];
        if (!rs.queues[q].examine) continue;
        rs.queues[q].examine = false;
        --rs.examining;
        switch (drain(pi, q, t, progressed)) {
          case drained::waits: break;
          case drained::suspended: rs.resume_index = k; return;
        }
      }
    }
  }

  /// Hardware queue q of rank pi moves on to its next op, its head having started.
  void next_head(std::size_t pi, std::size_t q) {
    rank_state& rs = c_.ranks[pi];
    ++rs.queues[q].next;
    // The op after the queue's new head is what this queue looks at after its next dispatch,
    // maybe many other ranks' events from now: start fetching its state and what its cost reads
    // when it does not start on the whole GPU (communication kernels hold SMs: TP overlap).
    if (rs.queues[q].next + 1 < rs.queues[q].end) {
      const std::size_t later = rs.queue_ops[rs.queues[q].next + 1];
      __builtin_prefetch(&rs.ops[later]);
      __builtin_prefetch(reinterpret_cast<const char*>(&rs.ops[later]) + sizeof(op_state) - 1);
      __builtin_prefetch(&c_.programs[pi].ops[later]);
      __builtin_prefetch(&c_.programs[pi].ops[later].memory_bytes);
    }
  }

 private:
  enum class drained { waits, suspended };

  /// The host of `rs` issues at `t` what it can; whether it issued anything.
  bool issue(rank_state& rs, double t) {
    bool issued = false;
    while (rs.next_issue < rs.ops.size()) {
      const std::size_t i = rs.next_issue;
      op_state& s = rs.ops[i];
      if (s.kind == schedule::op_kind::host_sync) {
        if (s.waiting > 0) break;
        rs.host_time = std::max(rs.host_time, t);
        s.start = s.end = rs.host_time;
        c_.finish(rs, i);
      } else {
        rs.host_time +=
            s.kind == schedule::op_kind::record || s.kind == schedule::op_kind::wait ? event_us_ : c_.m.launch_us;
        s.start = rs.host_time;  // its issue time till it starts
        s.now = state::issued;
        rs.examine(s.queue);
      }
      ++rs.next_issue;
      issued = true;
    }
    return issued;
  }

  /// Rank pi's queues to look at, higher-priority streams' heads first (several streams share a
  /// queue, so the order follows the heads).
  void order_queues(std::size_t pi) {
    rank_state& rs = c_.ranks[pi];
    const schedule::program& p = c_.programs[pi];
    rs.queue_order.clear();
    for (std::size_t q = 0; q < rs.queues.size(); ++q)
      if (rs.queues[q].examine && rs.has_head(q)) rs.queue_order.push_back(q);
    if (rs.queue_order.size() > 1)
      std::stable_sort(rs.queue_order.begin(), rs.queue_order.end(), [&](std::size_t a, std::size_t b) {
        return p.streams[static_cast<std::size_t>(p.ops[rs.head_op(a)].stream)].priority <
               p.streams[static_cast<std::size_t>(p.ops[rs.head_op(b)].stream)].priority;
      });
  }

  /// Hardware queue q of rank pi starts its heads at `t` while they can start (`progressed` set
  /// when one does).
  drained drain(std::size_t pi, std::size_t q, double t, bool& progressed) {
    rank_state& rs = c_.ranks[pi];
    while (rs.has_head(q)) {
      const std::size_t i = rs.head_op(q);
      op_state& s = rs.ops[i];
      if (s.start > t) {  // not issued yet at `t`
        c_.wake_up(pi, s.start);
        break;
      }
      if (s.waiting > 0) break;
      const schedule::op_kind kind = s.kind;
      if (rs.ahead && schedule::is_communication(kind)) {
        // A launch can change other ranks: it waits till they have reached `t`.
        rs.suspended = true;
        rs.resume_progressed = progressed;
        rs.examine(q);
        return drained::suspended;
      }
      if (kind == schedule::op_kind::record || kind == schedule::op_kind::wait) {
        s.start = s.end = t;
        c_.finish(rs, i);
      } else if (unlimited_) {
        if (kind == schedule::op_kind::compute) {
          s.now = state::running;
          s.start = t;
          s.end = t + c_.checked(s.whole_us, pi, i);
          c_.ends_at(pi, i);
        } else {
          launch(pi, i, t);
        }
      } else if (kind == schedule::op_kind::compute) {
        if (!sms_.start_compute(pi, i, t)) {
          rs.wait_for_sms(q);
          break;
        }
      } else {
        const int usual = std::max(1, kind == schedule::op_kind::collective ? c_.m.comm_sms : c_.m.p2p_sms);
        const int asked = c_.programs[pi].ops[i].sms;
        const int want = asked >= 0 ? asked : usual;
        double moved = 0;  // CTAs' worth its placement moves
        if (!sms_.seat_communication(pi, i, want, t, moved)) {
          rs.wait_for_sms(q);
          break;
        }
        // Against the machine's usual kernel, which moves the NVLink rate: more CTAs move more,
        // packed ones less; a kernel asked for fewer than usual is taken to reach the link rate
        // spread (TE's userbuffer kernels of 1-2 SMs), and a copy-engine transfer holds none.
        launch(pi, i, t, want == 0 ? never : moved / std::min(want, usual));
      }
      next_head(pi, q);
      progressed = true;
    }
    return drained::waits;
  }

  /// Communication op i of rank pi launched its kernel at `t`, placed to move `kernel` times what
  /// the machine's usual communication kernel moves (rendezvous::cap_of).
  void launch(std::size_t pi, std::size_t i, double t, double kernel = 1) {
    op_state& s = c_.ranks[pi].ops[i];
    s.now = state::launched;
    ++c_.ranks[pi].comm_active;
    if (s.group >= 0) groups_.launch(static_cast<std::size_t>(s.group), t, kernel);
  }

  step_context& c_;
  sm_pool& sms_;
  rendezvous& groups_;
  bool unlimited_;
  double event_us_;  ///< a record's or wait's host cost
};

}  // namespace overlap::sim::detail
