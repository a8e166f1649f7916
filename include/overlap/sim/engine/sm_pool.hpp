#pragma once
/// @file
/// The SM pool of the event loop (see sim/simulate.hpp): who holds a rank's SMs. A compute kernel
/// takes every free SM (one at least); a communication kernel takes the SMs it asks for from the
/// free pool, and from running kernels when there are too few: a GEMM gives them up at the end of
/// its current wave (a persistent GEMM only at its end), other kernels at once. A kernel that
/// gave SMs up runs slower until they come back when the communication kernel ends. A
/// communication kernel dispatched from its own hardware queue while persistent GEMMs hold every
/// SM is placed in the first GEMM's tail, its CTAs packed `machine::comm_ctas_per_sm` to an SM,
/// and keeps that placement for its life: it moves what its SMs can (`machine::comm_sm_share`),
/// as measured on an H200 (data/measured-h200/concurrency.jsonl). Stream priority plays no part
/// in this: CUDA's Programming Guide ("Stream Priorities") describes it as a hint for which
/// pending work the block scheduler takes first, without preempting running blocks, and a
/// priority of -5 changed none of the measured patterns; the issuer's queue order is the only
/// place it acts (issuer.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <overlap/sim/engine/links.hpp>
#include <overlap/sim/engine/state.hpp>

namespace overlap::sim::detail {

class sm_pool {
 public:
  explicit sm_pool(step_context& c) : c_(c), own_model_(c.cost.compute_reads_inputs_only()) {}

  /// Compute op i of rank pi starts at `t` on all of the rank's free SMs; false, with nothing
  /// started, when there are none.
  bool start_compute(std::size_t pi, std::size_t i, double t) {
    rank_state& rs = c_.ranks[pi];
    if (rs.free_sms < 1) return false;
    op_state& s = rs.ops[i];
    const double alone = c_.checked(rs.free_sms == c_.m.sms ? s.whole_us : on_sms(pi, i, rs.free_sms), pi, i);
    const double duration = alone * rs.pace;
    // Filled in place: a record built aside and copied in stalls on its partial stores.
    computing& k = rs.running.emplace_back();
    k.op = i;
    k.sms = rs.free_sms;
    k.since = t;
    k.alone = alone;
    k.duration = duration;
    rs.busy_sms += k.sms;
    rs.free_sms = 0;
    s.now = state::running;
    s.start = t;
    s.end = t + duration;
    c_.ends_at(pi, i);
    rs.sms_changed();
    return true;
  }

  /// Communication op i of rank pi, whose kernel asks for `want` SMs (one CTA each), takes them at
  /// `t`; false, with a wake-up set where SMs retire later, when it has to wait for them. `moved`
  /// becomes what its placement moves, in CTAs' worth: `want` spread one to an SM, less packed.
  bool seat_communication(std::size_t pi, std::size_t i, int want, double t, double& moved) {
    rank_state& rs = c_.ranks[pi];
    moved = want;
    if (rs.free_sms < want && c_.m.persistent_gemms && c_.m.comm_ctas_per_sm > 0)
      if (const int packed = pack_in_tail(pi, i, want, t, moved); packed != 0) return packed > 0;
    if (rs.free_sms < want) {
      if (!c_.m.persistent_gemms) {
        const double retire = wave_end(pi, t);
        if (retire > t) {
          c_.wake_up(pi, retire);
          return false;
        }
      }
      take(pi, want - rs.free_sms, t);
    }
    if (want > 0 && rs.free_sms < 1) return false;
    op_state& s = rs.ops[i];
    s.sms = std::min(rs.free_sms, want);
    rs.free_sms -= s.sms;
    if (s.sms < want && s.sms > 0 && c_.m.comm_ctas_per_sm > 0)  // its CTAs share the SMs it got
      moved = moved_by(want, s.sms, (want + s.sms - 1) / s.sms);
    return true;
  }

  /// The ranks whose transfers in flight changed (link_model::for_each_changed) by `t`: their
  /// compute kernels run the rest of their work at the pace the traffic now lets them
  /// (machine::compute_interference).
  void pace(link_model& links, double t) {
    links.for_each_changed([&](std::size_t pi) { repace(links, pi, t); });
  }
  /// The same for rank pi alone, if its transfers changed.
  void pace(link_model& links, std::size_t pi, double t) {
    if (links.take_changed(pi)) repace(links, pi, t);
  }

  /// Op i of rank pi ended at `t`: its SMs go back to the pool, and a communication kernel's to
  /// the compute kernels it slowed.
  void release(std::size_t pi, std::size_t i, double t) {
    rank_state& rs = c_.ranks[pi];
    rs.sms_changed();
    if (rs.ops[i].kind == schedule::op_kind::compute) {
      const auto k = std::find_if(rs.running.begin(), rs.running.end(), [&](const computing& x) { return x.op == i; });
      rs.free_sms += k->sms;
      rs.busy_sms -= k->sms;
      rs.running.erase(k);
    } else {
      rs.free_sms += rs.ops[i].sms;
      give_back(pi, t);
    }
  }

 private:
  /// A kernel dispatched while persistent GEMMs of other hardware queues hold the SMs (measured
  /// on an H200: a 16-CTA copy issued during a GEMM at CUDA_DEVICE_MAX_CONNECTIONS 8 starts in
  /// the GEMM's last round of tiles, its CTAs four to an SM on the first 4 SMs that free, and runs
  /// 2.7x slower for its whole life). The first SMs free when the earliest such GEMM enters its
  /// last round (one wave before its end); there the kernel takes ceil(want / per SM) of them.
  /// 1: placed; -1: waits (a wake-up set for that time); 0: not this case (a GEMM of its own
  /// queue holds SMs: the queue dispatches it after that GEMM, as one connection does).
  int pack_in_tail(std::size_t pi, std::size_t i, int want, double t, double& moved) {
    rank_state& rs = c_.ranks[pi];
    const std::size_t queue = rs.ops[i].queue;
    computing* first = nullptr;
    double tail = never;
    for (computing& k : rs.running) {
      if (rs.ops[k.op].queue == queue || wave_of(pi, k) <= 0) return 0;
      const double starts = std::max(k.since, rs.ops[k.op].end - k.wave);
      if (starts < tail) {
        tail = starts;
        first = &k;
      }
    }
    if (!first) return 0;
    if (tail > t) {
      c_.wake_up(pi, tail);
      return -1;
    }
    const int per_sm = c_.m.comm_ctas_per_sm;
    const int sms = std::min((want + per_sm - 1) / per_sm, std::max(1, first->sms - 1));
    if (first->sms - sms < 1) return -1;
    resize(pi, *first, first->sms - sms, t);
    op_state& s = rs.ops[i];
    s.sms = sms;
    moved = moved_by(want, sms, per_sm);
    return 1;
  }

  /// What a kernel of `want` CTAs moves, in CTAs' worth, on `sms` SMs holding `per_sm` each: an SM
  /// moves at most machine::comm_sm_share of them.
  double moved_by(int want, int sms, int per_sm) const {
    return std::min<double>(want, sms * std::min<double>(per_sm, c_.m.comm_sm_share));
  }
  /// Compute op i of rank pi on `sms` SMs: this library's model stretches the whole-GPU time the
  /// set-up kept; a derived model is asked.
  double on_sms(std::size_t pi, std::size_t i, int sms) const {
    const schedule::op& o = c_.programs[pi].ops[i];
    return own_model_ ? c_.cost.stretched_us(o, sms, c_.ranks[pi].ops[i].whole_us) : c_.cost.compute_us(o, sms);
  }
  /// Rank pi's compute kernels run at the pace its traffic lets them from `t` on.
  void repace(link_model& links, std::size_t pi, double t) {
    rank_state& rs = c_.ranks[pi];
    const double pace = 1 + c_.m.compute_interference * links.traffic(pi);
    if (pace == rs.pace) return;
    rs.pace = pace;
    for (computing& k : rs.running) rerun(pi, k, t);
  }
  /// A running compute op's SMs become `sms` at `t`: the work left runs at the new count's speed.
  void resize(std::size_t pi, computing& k, int sms, double t) {
    c_.ranks[pi].busy_sms += sms - k.sms;
    k.sms = sms;
    k.alone = c_.checked(on_sms(pi, k.op, sms), pi, k.op);
    rerun(pi, k, t);
  }
  /// Running compute op `k` of rank pi runs the work left from `t` on at its SMs' speed alone
  /// (`k.alone`) and its rank's pace.
  void rerun(std::size_t pi, computing& k, double t) {
    k.done = std::min(1.0, k.done + (k.duration > 0 ? (t - k.since) / k.duration : 1.0));
    k.since = t;
    k.duration = k.alone * c_.ranks[pi].pace;
    k.wave = -1;
    c_.ranks[pi].ops[k.op].end = t + (1 - k.done) * k.duration;
    c_.ends_at(pi, k.op);
  }
  /// The time of one wave of running compute op `k` of rank pi on its SMs, at its rank's pace (0:
  /// not in waves).
  double wave_of(std::size_t pi, computing& k) const {
    if (k.wave < 0) k.wave = c_.cost.wave_us(c_.programs[pi].ops[k.op], k.sms) * c_.ranks[pi].pace;
    return k.wave;
  }
  /// When the first running compute op of the rank whose blocks hold SMs ends its current wave
  /// (`t` if one is at a wave's end, or none has waves).
  double wave_end(std::size_t pi, double t) const {
    double first = never;
    for (computing& k : c_.ranks[pi].running) {
      if (wave_of(pi, k) <= 0) return t;
      if (t - k.since < 1e-9) {  // blocks placed now (the op started or changed SMs) hold a whole wave
        first = std::min(first, t + k.wave);
        continue;
      }
      const double left = std::fmod(c_.ranks[pi].ops[k.op].end - t, k.wave);
      first = std::min(first, left < 1e-6 * k.wave || k.wave - left < 1e-6 * k.wave ? t : t + left);
    }
    return first == never ? t : first;
  }
  /// Moves up to `count` SMs from the rank's running compute ops to its free pool.
  void take(std::size_t pi, int count, double t) {
    rank_state& rs = c_.ranks[pi];
    for (computing& k : rs.running) {
      if (count <= 0) break;
      const int have = k.sms;
      if (have < 2 || (c_.m.persistent_gemms && wave_of(pi, k) > 0)) continue;
      const int taken = std::min(count, have - 1);
      resize(pi, k, have - taken, t);
      rs.free_sms += taken;
      count -= taken;
    }
  }
  /// Returns free SMs to the rank's running compute ops that were slowed, which speed up again.
  void give_back(std::size_t pi, double t) {
    rank_state& rs = c_.ranks[pi];
    for (computing& k : rs.running) {
      if (rs.free_sms <= 0) break;
      const int have = k.sms;
      if (have >= c_.m.sms) continue;
      const int given = std::min(rs.free_sms, c_.m.sms - have);
      rs.free_sms -= given;
      resize(pi, k, have + given, t);
    }
  }

  step_context& c_;
  bool own_model_;
};

}  // namespace overlap::sim::detail
