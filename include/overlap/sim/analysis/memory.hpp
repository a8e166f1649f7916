#pragma once
/// @file
/// Memory a rank needs for a step, from its program: the sized buffers (`program::buffer_bytes`)
/// and the ops that write and read them.
///
/// What the rank keeps through the step is held from its start to its end: parameters, their
/// gradients (fp32 with grad_reduce_in_fp32, else the step's precision), the optimizer's state
/// (Adam's master weights and moments, schedule/optimizer_state.hpp, of what it updates: a shard of the data-parallel
/// group's buckets with the distributed optimizer, of the expert data-parallel group's for
/// experts) and the TP userbuffers. On a dense model with tp 1 the first three are Megatron-LM's
/// compute_weight_and_optimizer_memory (theoretical_memory_usage.py): 6 + 12 / dp bytes a
/// parameter with the distributed optimizer, 18 without, when gradients are reduced in fp32
/// (with tp > 1 it divides the norms by tp as well, which every tp rank holds whole: here they
/// are counted whole).
///
/// Everything else lives while its value is needed: from the op that writes it to the last op
/// that reads it before it is written anew (a recomputed forward writes again what its backward
/// reads; writes with no read between them fill one value in parts, as a ring's chunks do). Over
/// issue order that is what PyTorch's caching allocator sees, freeing a tensor when the host
/// drops it (`peak_in_issue_order`, no simulation needed); over a simulated timeline, from the
/// writer's start to the last reader's end (`peak_in_time`).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/sim/result.hpp>

namespace overlap::sim {

/// What a buffer's bytes are for.
enum class memory_use : std::uint8_t { weights, gradients, optimizer, activations, communication };
inline constexpr std::size_t memory_uses = 5;
using per_use = std::array<std::int64_t, memory_uses>;

constexpr memory_use use_of(schedule::buffer_kind k) {
  using schedule::buffer_kind;
  switch (k) {
    case buffer_kind::parameters: return memory_use::weights;
    case buffer_kind::gradients: return memory_use::gradients;
    case buffer_kind::optimizer_state: return memory_use::optimizer;
    case buffer_kind::gathered:
    case buffer_kind::ring_chunk:
    case buffer_kind::reduced_gradients:
    case buffer_kind::parameter_shard:
    case buffer_kind::userbuffer: return memory_use::communication;
    default: return memory_use::activations;
  }
}
constexpr std::string_view to_string(memory_use u) {
  switch (u) {
    case memory_use::weights: return "weights";
    case memory_use::gradients: return "gradients";
    case memory_use::optimizer: return "optimizer";
    case memory_use::activations: return "activations";
    case memory_use::communication: return "communication";
  }
  return "?";
}
/// Held from the step's start to its end, whatever reads or writes it.
constexpr bool held_through_step(schedule::buffer_kind k) {
  using schedule::buffer_kind;
  return k == buffer_kind::parameters || k == buffer_kind::gradients || k == buffer_kind::optimizer_state ||
         k == buffer_kind::userbuffer;
}

struct model_state {
  std::int64_t weights = 0, gradients = 0, optimizer = 0;  ///< bytes
  constexpr std::int64_t total() const { return weights + gradients + optimizer; }
  friend constexpr bool operator==(const model_state&, const model_state&) = default;
};

namespace detail {
inline std::int64_t bytes_of(const schedule::program& p, std::size_t b) {
  return b < p.buffer_bytes.size() ? p.buffer_bytes[b] : 0;
}
/// Throws std::invalid_argument (naming `who`) for more sizes than buffers or a size below 0.
inline void check_sizes(const schedule::program& p, std::string_view who) {
  const std::string lead = std::string(who) + ": rank " + std::to_string(p.rank) + " has ";
  if (p.buffer_bytes.size() > p.buffers.size())
    throw std::invalid_argument(lead + std::to_string(p.buffer_bytes.size()) + " buffer sizes for " +
                                std::to_string(p.buffers.size()) + " buffers");
  for (std::size_t b = 0; b < p.buffer_bytes.size(); ++b)
    if (p.buffer_bytes[b] < 0)
      throw std::invalid_argument(lead + "buffer " + std::to_string(b) + " of " + std::to_string(p.buffer_bytes[b]) +
                                  " bytes");
}
}  // namespace detail

/// What a step may take of a GPU with `capacity` bytes of memory: less `reserved_bytes` for the
/// CUDA context with its kernels' modules, cuBLAS's workspaces and NCCL's buffers (each
/// communicator keeps its channels' buffers, NCCL_BUFFSIZE 4 MiB apiece), and `fragmentation` of
/// the rest, which PyTorch's caching allocator holds beyond what live tensors take. Both are
/// assumptions, not measurements: a rank at 95 % of what this leaves is at the edge.
inline constexpr std::int64_t reserved_bytes = 3'000'000'000;
inline constexpr double fragmentation = 0.05;
constexpr std::int64_t usable_bytes(std::int64_t capacity) {
  return capacity <= reserved_bytes
             ? 0
             : static_cast<std::int64_t>(static_cast<double>(capacity - reserved_bytes) * (1 - fragmentation));
}

/// One value of a buffer: it is written by op `first` and last read (or written) by op `last`
/// (indices into program::ops, first <= last).
struct live_range {
  int buffer = 0;
  int first = 0, last = 0;
  friend constexpr bool operator==(const live_range&, const live_range&) = default;
};

namespace detail {
/// `live_ranges` in the order the values die.
inline std::vector<live_range> ranges_of(const schedule::program& p) {
  const std::size_t n = p.buffers.size();
  std::vector<int> first(n, -1), last(n, -1);
  std::vector<char> read_since(n, 0);
  std::vector<live_range> out;
  const auto check = [&](int b, std::size_t i) {
    if (b < 0 || static_cast<std::size_t>(b) >= n)
      throw std::invalid_argument("live_ranges: op " + std::to_string(i) + " names buffer " + std::to_string(b) +
                                  " of " + std::to_string(n));
    return static_cast<std::size_t>(b);
  };
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const schedule::op& o = p.ops[i];
    const int at = static_cast<int>(i);
    for (const int r : o.reads) {
      const std::size_t b = check(r, i);
      if (held_through_step(p.buffers[b].kind)) continue;
      if (first[b] < 0) first[b] = 0;
      last[b] = at;
      read_since[b] = 1;
    }
    for (const int w : o.writes) {
      const std::size_t b = check(w, i);
      if (held_through_step(p.buffers[b].kind)) continue;
      const bool reads_it = std::find(o.reads.begin(), o.reads.end(), w) != o.reads.end();
      if (first[b] >= 0 && read_since[b] && !reads_it) {  // a new value: the old one died at its last read
        out.push_back({w, first[b], last[b]});
        first[b] = -1;
      }
      if (first[b] < 0) {
        first[b] = at;
        read_since[b] = 0;
      }
      last[b] = std::max(last[b], at);
    }
  }
  for (std::size_t b = 0; b < n; ++b)
    if (first[b] >= 0) out.push_back({static_cast<int>(b), first[b], last[b]});
  return out;
}
}  // namespace detail

/// The live ranges of `p`'s buffers that are not held through the step, ordered by `first`
/// (sized or not). A value read before any op writes it came from before the step: it is live
/// from op 0. Throws std::invalid_argument for a buffer index out of range.
inline std::vector<live_range> live_ranges(const schedule::program& p) {
  std::vector<live_range> out = detail::ranges_of(p);
  std::sort(out.begin(), out.end(), [](const live_range& a, const live_range& b) {
    return a.first != b.first ? a.first < b.first : a.buffer < b.buffer;
  });
  return out;
}

/// The most memory a rank's buffers take at once, and what takes it.
struct memory_peak {
  std::int64_t bytes = 0;
  per_use by_use{};  ///< what is alive at the peak
  int op = -1;       ///< the op at which it is reached (its start in time): index into program::ops
  double at_us = 0;  ///< peak_in_time: when
  friend constexpr bool operator==(const memory_peak&, const memory_peak&) = default;
};

namespace detail {
/// Bytes held through the step, by use (each a sum that `sweep` checks: at most 2^63 apiece).
inline per_use held_bytes(const schedule::program& p) {
  per_use held{};
  for (std::size_t b = 0; b < p.buffers.size(); ++b)
    if (held_through_step(p.buffers[b].kind)) {
      std::int64_t& sum = held[static_cast<std::size_t>(use_of(p.buffers[b].kind))];
      if (__builtin_add_overflow(sum, bytes_of(p, b), &sum))
        throw std::invalid_argument("memory: the buffers of rank " + std::to_string(p.rank) +
                                    " add up past 2^63 bytes");
    }
  return held;
}
inline std::int64_t sum(const per_use& u) {
  std::int64_t s = 0;
  for (const std::int64_t v : u) s += v;
  return s;
}
/// One allocation (+) or release (-) of a live range's bytes, at `key` (an op index or a time).
template <class Key>
struct memory_event {
  Key key;
  bool release;
  std::int64_t bytes;
  std::size_t use;
  int op;
};
/// Sorts `events` by key, releases before allocations at one key. Throws std::invalid_argument
/// when the held bytes and all allocations together pass 2^63 bytes (then no running sum can).
template <class Key>
void order(const per_use& live, std::vector<memory_event<Key>>& events, int rank) {
  std::int64_t all = 0;
  const auto add = [&](std::int64_t bytes) {
    if (__builtin_add_overflow(all, bytes, &all))
      throw std::invalid_argument("memory: the buffers of rank " + std::to_string(rank) + " add up past 2^63 bytes");
  };
  for (const std::int64_t bytes : live) add(bytes);
  for (const memory_event<Key>& e : events)
    if (!e.release) add(e.bytes);
  std::sort(events.begin(), events.end(), [](const memory_event<Key>& a, const memory_event<Key>& b) {
    return a.key != b.key ? a.key < b.key : a.release > b.release;
  });
}
/// The peak of the held bytes plus the events' running sum (see `order`).
template <class Key>
memory_peak sweep(per_use live, std::vector<memory_event<Key>>& events, int rank) {
  order(live, events, rank);
  std::int64_t total = sum(live);
  memory_peak peak{.bytes = total, .by_use = live};
  for (const memory_event<Key>& e : events) {
    live[e.use] += e.release ? -e.bytes : e.bytes;
    total += e.release ? -e.bytes : e.bytes;
    if (!e.release && total > peak.bytes) {
      peak.bytes = total;
      peak.by_use = live;
      peak.op = e.op;
      if constexpr (std::is_floating_point_v<Key>) peak.at_us = e.key;
    }
  }
  return peak;
}
}  // namespace detail

/// The model state of the rank that runs `p`: what it holds through the step but its
/// userbuffers. Throws std::invalid_argument for sizes that are not the buffers' (more of them,
/// or below 0) and sums past 2^63 bytes.
inline model_state model_state_of(const schedule::program& p) {
  detail::check_sizes(p, "model_state_of");
  const per_use held = detail::held_bytes(p);
  const model_state m{held[static_cast<std::size_t>(memory_use::weights)],
                      held[static_cast<std::size_t>(memory_use::gradients)],
                      held[static_cast<std::size_t>(memory_use::optimizer)]};
  std::int64_t total = 0;
  if (__builtin_add_overflow(m.weights, m.gradients, &total) || __builtin_add_overflow(total, m.optimizer, &total))
    throw std::invalid_argument("model_state_of: the state of rank " + std::to_string(p.rank) +
                                " adds up past 2^63 bytes");
  return m;
}

/// The peak over issue order: a value takes its bytes from its first op to its last, the ops in
/// between included: what planning can use without a simulation. Over a timeline a value may
/// live shorter or longer (ops of other streams run beside it), so this is an estimate of that
/// peak, not a bound. Throws std::invalid_argument
/// for a buffer index out of range, sizes that are not the buffers' (more of them, or below 0)
/// and sizes that add up past 2^63 bytes.
inline memory_peak peak_in_issue_order(const schedule::program& p) {
  detail::check_sizes(p, "peak_in_issue_order");
  std::vector<detail::memory_event<int>> events;
  for (const live_range& r : detail::ranges_of(p)) {
    const std::int64_t bytes = detail::bytes_of(p, static_cast<std::size_t>(r.buffer));
    if (bytes == 0) continue;
    const auto use = static_cast<std::size_t>(use_of(p.buffers[static_cast<std::size_t>(r.buffer)].kind));
    events.push_back({r.first, false, bytes, use, r.first});
    events.push_back({r.last + 1, true, bytes, use, r.last});
  }
  return detail::sweep(detail::held_bytes(p), events, p.rank);
}

namespace detail {
/// When each op of a program ran (`never`: it did not), and when the last of them ended.
struct op_times {
  static constexpr double never = -1;
  std::vector<double> start, end;
  double last_end = 0;
  explicit op_times(std::size_t ops) : start(ops, never), end(ops, never) {}
  void add(const schedule::program& p, const interval& i) {
    if (i.op < 0 || static_cast<std::size_t>(i.op) >= start.size())
      throw std::invalid_argument("peak_in_time: an interval of rank " + std::to_string(p.rank) + " names op " +
                                  std::to_string(i.op) + " of " + std::to_string(start.size()));
    if (!(i.start_us >= 0 && i.end_us >= i.start_us && i.end_us < std::numeric_limits<double>::infinity()))
      throw std::invalid_argument("peak_in_time: op " + std::to_string(i.op) + " of rank " + std::to_string(p.rank) +
                                  " runs from " + std::to_string(i.start_us) + " to " + std::to_string(i.end_us) +
                                  " us");
    start[static_cast<std::size_t>(i.op)] = i.start_us;
    end[static_cast<std::size_t>(i.op)] = i.end_us;
    last_end = std::max(last_end, i.end_us);
  }
};
/// The allocations and releases of `p`'s values over time `t`.
inline std::vector<memory_event<double>> time_events(const schedule::program& p, const op_times& t) {
  check_sizes(p, "peak_in_time");
  std::vector<memory_event<double>> events;
  for (const live_range& r : ranges_of(p)) {
    const std::int64_t bytes = bytes_of(p, static_cast<std::size_t>(r.buffer));
    const double from = t.start[static_cast<std::size_t>(r.first)];
    if (bytes == 0 || from == op_times::never) continue;
    const double to = t.end[static_cast<std::size_t>(r.last)];
    const auto use = static_cast<std::size_t>(use_of(p.buffers[static_cast<std::size_t>(r.buffer)].kind));
    events.push_back({from, false, bytes, use, r.first});
    events.push_back({to == op_times::never ? t.last_end : std::max(from, to), true, bytes, use, r.last});
  }
  return events;
}
inline memory_peak peak_over(const schedule::program& p, const op_times& t) {
  std::vector<memory_event<double>> events = time_events(p, t);
  return sweep(held_bytes(p), events, p.rank);
}
inline op_times times_of(const schedule::program& p, std::span<const interval> ran) {
  op_times t(p.ops.size());
  for (const interval& i : ran)
    if (i.rank == p.rank) t.add(p, i);
  return t;
}
}  // namespace detail

/// The peak over the simulated timeline of the rank that runs `p`: `ran` holds its ops'
/// intervals (simulate's with `options::intervals`; other ranks' are skipped). A value takes its
/// bytes from its writer's start to its last reader's end; a value whose ops did not all run
/// (a hang) from its writer's start to the end of what ran. Throws std::invalid_argument for an
/// interval naming an op `p` does not have or not running over finite times from 0, and as
/// `peak_in_issue_order` does.
inline memory_peak peak_in_time(const schedule::program& p, std::span<const interval> ran) {
  return detail::peak_over(p, detail::times_of(p, ran));
}

/// The bytes a rank's buffers take from `at_us` on (until the next point).
struct memory_point {
  double at_us = 0;
  std::int64_t bytes = 0;
  friend constexpr bool operator==(const memory_point&, const memory_point&) = default;
};
/// The memory of the rank that runs `p` over its simulated timeline (as `peak_in_time` counts
/// it): a point at 0 and one at each time it changes. Throws as `peak_in_time` does.
inline std::vector<memory_point> memory_curve(const schedule::program& p, std::span<const interval> ran) {
  std::vector<detail::memory_event<double>> events = detail::time_events(p, detail::times_of(p, ran));
  const per_use held = detail::held_bytes(p);
  detail::order(held, events, p.rank);
  std::vector<memory_point> out{{0, detail::sum(held)}};
  for (const detail::memory_event<double>& e : events) {
    const std::int64_t bytes = out.back().bytes + (e.release ? -e.bytes : e.bytes);
    if (out.back().at_us == e.key)
      out.back().bytes = bytes;
    else
      out.push_back({e.key, bytes});
  }
  return out;
}

/// `peak_in_time` of each program of `step` (one per rank, or per representative) from the
/// intervals of `simulated`, read once.
inline std::vector<memory_peak> peaks_in_time(const std::vector<schedule::program>& step, const result& simulated) {
  std::vector<detail::op_times> times;
  std::vector<int> index;  // by rank: into step, or -1
  for (std::size_t k = 0; k < step.size(); ++k) {
    times.emplace_back(step[k].ops.size());
    const auto rank = static_cast<std::size_t>(std::max(0, step[k].rank));
    if (index.size() <= rank) index.resize(rank + 1, -1);
    index[rank] = static_cast<int>(k);
  }
  for (const interval& i : simulated.intervals)
    if (i.rank >= 0 && static_cast<std::size_t>(i.rank) < index.size() &&
        index[static_cast<std::size_t>(i.rank)] >= 0) {
      const auto k = static_cast<std::size_t>(index[static_cast<std::size_t>(i.rank)]);
      times[k].add(step[k], i);
    }
  std::vector<memory_peak> out;
  out.reserve(step.size());
  for (std::size_t k = 0; k < step.size(); ++k) out.push_back(detail::peak_over(step[k], times[k]));
  return out;
}

/// The index of the highest of `peaks` (the first of equals; 0 when there are none).
inline std::size_t highest(const std::vector<memory_peak>& peaks) {
  std::size_t most = 0;
  for (std::size_t k = 1; k < peaks.size(); ++k)
    if (peaks[k].bytes > peaks[most].bytes) most = k;
  return most;
}

/// The peak memory of each program of a simulated step (one per rank, or per representative of
/// a class of symmetric ranks), and the rank that needs the most.
struct step_memory {
  std::vector<int> ranks;          ///< of each program
  std::vector<memory_peak> peaks;  ///< of each program
  std::size_t most = 0;            ///< the index of the highest peak
  int rank() const { return ranks[most]; }
  const memory_peak& peak() const { return peaks[most]; }
};

/// `step_memory` of `step` from the intervals of `simulated`. Throws std::invalid_argument for a
/// step with no program.
inline step_memory memory_of(const std::vector<schedule::program>& step, const result& simulated) {
  if (step.empty()) throw std::invalid_argument("memory_of: the step has no program");
  step_memory m{{}, peaks_in_time(step, simulated)};
  for (const schedule::program& p : step) m.ranks.push_back(p.rank);
  m.most = highest(m.peaks);
  return m;
}

}  // namespace overlap::sim
