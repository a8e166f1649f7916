#pragma once
/// @file
/// The simulator's queue of future times: an indexed binary min-heap in which each timer id
/// (0 .. ids-1) holds at most one time. Setting a timer again moves it, so the queue never holds a
/// stale entry and its size is bounded by the timers set, not by how often they change. Timers
/// that fire at the same time come out in the order of their 64-bit `order` key (the simulator's:
/// rank and op), so simultaneous events need no second sort.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/sim/engine/large_array.hpp>

namespace overlap::sim::detail {

class timer_queue {
 public:
  explicit timer_queue(std::size_t ids) { reset(ids); }

  /// Empty, for timer ids 0 .. ids-1 (keeping its storage).
  void reset(std::size_t ids) {
    if (ids >= absent)
      throw std::length_error("simulate: " + std::to_string(ids) + " timers do not fit the event queue's 32-bit ids");
    heap_.clear();
    pos_.assign(ids, absent);
  }

  bool empty() const { return heap_.empty(); }
  double top_time() const { return heap_.front().time; }
  std::uint64_t top_order() const { return heap_.front().order; }
  bool contains(std::size_t id) const { return pos_[id] != absent; }

  struct fired {
    double time;
    std::uint64_t order;
    std::size_t id;
  };

  /// Timer `id` fires at `time` (whether or not it was set, and whether earlier or later), after
  /// the timers of that time with a lower `order`.
  void set(std::size_t id, double time, std::uint64_t order) {
    std::uint32_t at = pos_[id];
    if (at == absent) {
      at = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back({time, order, static_cast<std::uint32_t>(id)});
      pos_[id] = at;
      up(at);
      return;
    }
    const entry old = heap_[at];
    heap_[at].time = time;
    heap_[at].order = order;
    if (before(heap_[at], old))
      up(at);
    else
      down(at);
  }
  /// Timer `id` fires at `time` unless it is set to fire earlier already.
  void set_earlier(std::size_t id, double time, std::uint64_t order) {
    if (pos_[id] == absent || time < heap_[pos_[id]].time) set(id, time, order);
  }
  /// When timer `id` fires; it must be set.
  double time_of(std::size_t id) const { return heap_[pos_[id]].time; }
  /// Timer `id` no longer fires (whether or not it was set).
  void remove(std::size_t id) {
    const std::uint32_t at = pos_[id];
    if (at == absent) return;
    pos_[id] = absent;
    const entry last = heap_.back();
    heap_.pop_back();
    if (at == heap_.size()) return;  // it was the last entry
    const entry old = heap_[at];
    place(at, last);
    if (before(last, old))
      up(at);
    else
      down(at);
  }
  /// Removes and returns the earliest timer; the queue must not be empty.
  fired pop() {
    const entry first = heap_.front();
    pos_[first.id] = absent;
    const entry last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) {
      heap_.front() = last;
      pos_[last.id] = 0;
      down(0);
    }
    return {first.time, first.order, first.id};
  }

 private:
  static constexpr std::uint32_t absent = std::numeric_limits<std::uint32_t>::max();
  struct entry {
    double time;
    std::uint64_t order;
    std::uint32_t id;
  };
  static bool before(const entry& a, const entry& b) {
    return a.time < b.time || (a.time == b.time && a.order < b.order);
  }
  void place(std::uint32_t at, entry e) {
    heap_[at] = e;
    pos_[e.id] = at;
  }
  void up(std::uint32_t at) {
    const entry e = heap_[at];
    while (at > 0) {
      const std::uint32_t parent = (at - 1) / 2;
      if (!before(e, heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, e);
  }
  void down(std::uint32_t at) {
    const entry e = heap_[at];
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t child = 2 * static_cast<std::size_t>(at) + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap_[child + 1], heap_[child])) ++child;
      if (!before(heap_[child], e)) break;
      place(at, heap_[child]);
      at = static_cast<std::uint32_t>(child);
    }
    place(at, e);
  }

  large_vector<entry> heap_;
  large_vector<std::uint32_t> pos_;
};

}  // namespace overlap::sim::detail
