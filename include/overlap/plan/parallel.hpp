#pragma once
/// @file
/// Independent simulations on all cores: `parallel_for` runs a function over the indices
/// 0..n-1 on a few threads. The simulator, the generators and the verifier keep no global state
/// and read their inputs (programs, cost model) as const, so any number of them can run at once;
/// a caller that writes each index's result to its own slot gets exactly the serial results.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <type_traits>
#include <vector>

namespace overlap::plan {

/// The threads `parallel_for` uses by default: one per core (at least one).
inline unsigned default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

/// Calls `fn(i)` once for every i in [0, n), on up to `threads` threads (0: `default_threads()`;
/// 1 runs them in order on the calling thread). Indices are handed out one at a time, so uneven
/// work balances. Returns when every call has returned; if calls threw, every index still runs
/// and the exception of the lowest index that threw is rethrown (what a serial loop that ran
/// them all would report first). A `fn(i, worker)` also gets the index of the thread that runs
/// it, below `threads` (0: the calling thread), for memory of its own (a `sim::workspace`).
template <class Fn>
void parallel_for(std::size_t n, Fn&& fn, unsigned threads = 0) {
  if (threads == 0) threads = default_threads();
  const std::size_t workers = std::min<std::size_t>(threads, n);
  std::vector<std::exception_ptr> failed(n);
  const auto call = [&](std::size_t i, unsigned worker) {
    try {
      if constexpr (std::is_invocable_v<Fn&, std::size_t, unsigned>)
        fn(i, worker);
      else
        fn(i);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i) call(i, 0);
  } else {
    std::atomic<std::size_t> next{0};
    const auto work = [&](unsigned worker) {
      for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) call(i, worker);
    };
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work, static_cast<unsigned>(t));
    work(0);
    for (std::thread& t : pool) t.join();
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace overlap::plan
