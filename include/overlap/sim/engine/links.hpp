#pragma once
/// @file
/// The link model of the event loop (see sim/simulate.hpp): each rank has four links (NVLink out and
/// in, network out and in). A transfer (one rendezvous group's) loads some of them; the transfers
/// in flight on a link share it equally, a transfer progresses at the smallest share among its
/// links, and its end moves whenever a transfer on one of them starts or ends.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/semantics.hpp>
#include <overlap/sim/engine/state.hpp>
#include <overlap/sim/engine/timer_queue.hpp>

namespace overlap::sim::detail {

/// The links a communication op of kind `kind` loads, as indices into its rank's four (0 NVLink
/// out, 1 NVLink in, 2 network out, 3 network in): a send the outgoing one, a receive the incoming
/// one, a collective both; the network's when its transfer leaves the node (`crosses_nodes`). The
/// simulator shares these links; the lower bound sums their busy time.
template <class F>
void for_each_link(schedule::op_kind kind, bool crosses_nodes, F f) {
  const std::size_t base = crosses_nodes ? 2 : 0;
  if (kind != schedule::op_kind::recv) f(base);
  if (kind != schedule::op_kind::send) f(base + 1);
}
/// The same for communication op `o` of `p`.
template <class F>
void for_each_link(const schedule::program& p, const schedule::op& o, int gpus_per_node, F f) {
  for_each_link(o.kind, schedule::crosses_nodes(p, o, gpus_per_node), f);
}

class link_model {
 public:
  /// For `ranks` ranks' links; groups are added with `add_link` and `close_group`, in order. A
  /// transfer's end is timer `first_timer` + group, ordered among simultaneous events by `order`.
  /// With `track_traffic`, it keeps track of the ranks whose traffic changes (see `traffic`,
  /// `for_each_changed`), counting the network's links at `network_share` (their rate over
  /// NVLink's).
  link_model(std::size_t ranks, std::size_t groups, timer_queue& timers, std::size_t first_timer,
             bool track_traffic = false, double network_share = 0)
      : timers_(timers),
        first_timer_(first_timer),
        network_share_(network_share),
        transfers_(groups),
        on_link_(4 * ranks),
        changed_(track_traffic ? ranks : 0, 0) {
    begin_.reserve(groups + 1);
    begin_.push_back(0);
    order_.reserve(groups);
  }
  /// The group being added loads link `l` of rank `rank` (see for_each_link).
  void add_link(std::size_t rank, std::size_t l) { links_.push_back(4 * rank + l); }
  /// The group being added is complete; its transfer's end comes at `order` among the events of
  /// its time.
  void close_group(std::uint64_t order) {
    begin_.push_back(links_.size());
    order_.push_back(order);
  }

  /// Group g's transfer starts at `t`: after `latency` us, `work` us of bandwidth time at the
  /// full rate, shared with the transfers on its links, at most at `cap` of it (its kernels'
  /// placement: see sm_pool::pack_in_tail).
  void start(std::size_t g, double t, double latency, double work, double cap = 1) {
    transfer& x = transfers_[g];
    x.cap = cap;
    x.work = x.left = work;
    x.since = t + latency;
    x.in_flight = true;
    for (const std::size_t l : links_of(g)) {
      on_link_[l].push_back(g);
      mark(l);
    }
    if (links_of(g).empty())
      rerate(g, t);
    else
      reshare(links_of(g), t);
  }
  /// Group g's transfer ends at `t` (for every member at once), if it is in flight: its links are
  /// shared by fewer.
  void end(std::size_t g, double t) {
    if (!transfers_[g].in_flight) return;
    transfers_[g].in_flight = false;
    for (const std::size_t l : links_of(g)) {
      std::erase(on_link_[l], g);
      mark(l);
    }
    reshare(links_of(g), t);
  }
  /// Group g's transfer, in flight, may move at most `cap` of its link rate from `t` on.
  void recap(std::size_t g, double cap, double t) {
    if (transfers_[g].cap == cap) return;
    transfers_[g].cap = cap;
    rerate(g, t);
  }
  /// Calls f(g) once for each group whose transfer is in flight on one of rank `rank`'s links.
  template <class F>
  void for_each_in_flight(std::size_t rank, F f) {
    const std::array<std::size_t, 4> links{4 * rank, 4 * rank + 1, 4 * rank + 2, 4 * rank + 3};
    for_each_on(std::span<const std::size_t>(links), f);
  }
  /// What the transfers in flight on rank `rank`'s links move now, in NVLink rates (a transfer
  /// moving the NVLink rate out and in: 1; a send or a receive alone: half of it; the network's
  /// links count at their rate over NVLink's): the memory traffic they bring to its GPU. A link's
  /// rates are summed in an order of their own (two in either order: addition commutes; more
  /// smallest first), not in the order the transfers started (a step of class representatives
  /// starts them in another order).
  double traffic(std::size_t rank) {
    double moved = 0;
    for (std::size_t l = 4 * rank; l < 4 * rank + 4; ++l) {
      const std::vector<std::size_t>& on = on_link_[l];
      double rates = 0;
      if (on.size() <= 2) {
        for (const std::size_t g : on) rates += transfers_[g].rate;
      } else {
        rates_.clear();
        for (const std::size_t g : on) rates_.push_back(transfers_[g].rate);
        std::sort(rates_.begin(), rates_.end());
        for (const double r : rates_) rates += r;
      }
      moved += 0.5 * rates * (l % 4 < 2 ? 1.0 : network_share_);
    }
    return moved;
  }
  /// Calls f(rank) once for each rank whose traffic may have changed since it was last taken, in
  /// the order they changed (none when not tracked).
  template <class F>
  void for_each_changed(F f) {
    for (std::size_t i = 0; i < changed_list_.size(); ++i)  // f may not add to it
      if (take_changed(changed_list_[i])) f(changed_list_[i]);
    changed_list_.clear();
  }
  /// Whether rank `rank`'s traffic may have changed since it was last taken; it is taken now.
  bool take_changed(std::size_t rank) {
    if (changed_.empty() || !changed_[rank]) return false;
    changed_[rank] = 0;
    return true;
  }
  /// When group g's transfer ends, as things stand.
  double end_of(std::size_t g) const { return transfers_[g].end; }
  /// The bandwidth part of group g's transfer, at the full rate.
  double work_of(std::size_t g) const { return transfers_[g].work; }

 private:
  struct transfer {
    double work = 0;   ///< the bandwidth part of its time, at the full rate
    double left = 0;   ///< of which left, in microseconds at the full rate
    double rate = 1;   ///< its share now
    double cap = 1;    ///< the most its kernels' placement lets it move, as a share
    double since = 0;  ///< when `left` was last brought up to date (or its latency ends)
    double end = never;
    bool in_flight = false;  ///< on its links
  };
  std::span<const std::size_t> links_of(std::size_t g) const {
    return std::span<const std::size_t>(links_.data() + begin_[g], begin_[g + 1] - begin_[g]);
  }
  /// Brings transfer g up to date at `t` and gives it its share now; it ends when its work is
  /// done at that rate.
  void rerate(std::size_t g, double t) {
    transfer& x = transfers_[g];
    if (t > x.since) {  // past its latency: its work progressed at the old rate
      x.left = std::max(0.0, x.left - (t - x.since) * x.rate);
      x.since = t;
    }
    const double before = x.rate;
    x.rate = x.cap;
    for (const std::size_t l : links_of(g)) x.rate = std::min(x.rate, 1.0 / static_cast<double>(on_link_[l].size()));
    if (x.rate != before)
      for (const std::size_t l : links_of(g)) mark(l);
    x.end = x.since + x.left / x.rate;
    timers_.set(first_timer_ + g, x.end, order_[g]);
  }
  /// The traffic of link l's rank changed, if it is tracked.
  void mark(std::size_t l) {
    if (changed_.empty() || changed_[l / 4]) return;
    changed_[l / 4] = 1;
    changed_list_.push_back(l / 4);
  }
  /// A transfer started or ended on `g_links` at `t`: every transfer in flight on one of them
  /// gets its new share.
  void reshare(std::span<const std::size_t> g_links, double t) {
    for_each_on(g_links, [&](std::size_t h) { rerate(h, t); });
  }
  /// Calls f(g) once for each group in flight on one of `links`.
  template <class F>
  void for_each_on(std::span<const std::size_t> links, F f) {
    touched_.clear();
    for (const std::size_t l : links) touched_.insert(touched_.end(), on_link_[l].begin(), on_link_[l].end());
    std::sort(touched_.begin(), touched_.end());
    touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
    for (const std::size_t g : touched_) f(g);
  }

  timer_queue& timers_;
  std::size_t first_timer_;
  double network_share_;
  std::vector<transfer> transfers_;
  std::vector<std::vector<std::size_t>> on_link_;  ///< groups in flight per link
  std::vector<std::size_t> links_, begin_;         ///< group g loads links_[begin_[g] .. begin_[g + 1])
  std::vector<std::uint64_t> order_;
  std::vector<std::size_t> touched_;
  std::vector<double> rates_;  ///< traffic's scratch
  std::vector<char> changed_;  ///< per rank, whether it is in changed_list_ (empty: not tracked)
  std::vector<std::size_t> changed_list_;
};

}  // namespace overlap::sim::detail
