#pragma once
/// @file
/// The simulator's queue of future times: an indexed binary min-heap in which each timer id
/// (0 .. ids-1) holds at most one time. Setting a timer again moves it, so the queue never holds a
/// stale entry and its size is bounded by the timers set, not by how often they change. A timer
/// carries a 32-bit tag of its owner's choosing (the simulator's: the rank of an op's timer).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace overlap::sim::detail {

class timer_queue {
 public:
  explicit timer_queue(std::size_t ids) {
    if (ids >= absent)
      throw std::length_error("simulate: " + std::to_string(ids) + " timers do not fit the event queue's 32-bit ids");
    pos_.assign(ids, absent);
  }

  bool empty() const { return heap_.empty(); }
  double top_time() const { return heap_.front().time; }
  bool contains(std::size_t id) const { return pos_[id] != absent; }

  struct fired {
    double time;
    std::size_t id;
    std::uint32_t tag;
  };

  /// Timer `id` fires at `time` (whether or not it was set, and whether earlier or later).
  void set(std::size_t id, double time, std::uint32_t tag = 0) {
    std::uint32_t at = pos_[id];
    if (at == absent) {
      at = static_cast<std::uint32_t>(heap_.size());
      heap_.push_back({time, static_cast<std::uint32_t>(id), tag});
      pos_[id] = at;
      up(at);
      return;
    }
    const double old = heap_[at].time;
    heap_[at].time = time;
    heap_[at].tag = tag;
    if (time < old) up(at);
    else down(at);
  }
  /// Timer `id` fires at `time` unless it is set to fire earlier already.
  void set_earlier(std::size_t id, double time) {
    if (pos_[id] == absent || time < heap_[pos_[id]].time) set(id, time);
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
    return {first.time, first.id, first.tag};
  }

 private:
  static constexpr std::uint32_t absent = std::numeric_limits<std::uint32_t>::max();
  struct entry {
    double time;
    std::uint32_t id, tag;
  };
  void place(std::uint32_t at, entry e) {
    heap_[at] = e;
    pos_[e.id] = at;
  }
  void up(std::uint32_t at) {
    const entry e = heap_[at];
    while (at > 0) {
      const std::uint32_t parent = (at - 1) / 2;
      if (!(e.time < heap_[parent].time)) break;
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
      if (child + 1 < n && heap_[child + 1].time < heap_[child].time) ++child;
      if (!(heap_[child].time < e.time)) break;
      place(at, heap_[child]);
      at = static_cast<std::uint32_t>(child);
    }
    place(at, e);
  }

  std::vector<entry> heap_;
  std::vector<std::uint32_t> pos_;
};

}  // namespace overlap::sim::detail
