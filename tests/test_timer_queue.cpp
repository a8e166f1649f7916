// The simulator's timer queue: each id holds one time; setting it again moves it (earlier or
// later), removing it takes it out, ties come out by their order key, and a popped or removed
// timer can be set again.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include <overlap/sim/engine/timer_queue.hpp>

using overlap::sim::detail::timer_queue;

TEST_CASE("timers come out by time, then by order key") {
  timer_queue q(5);
  q.set(0, 3.0, 7);
  q.set(1, 1.0, 9);
  q.set(2, 3.0, 2);
  q.set(3, 2.0, 0);
  std::vector<std::size_t> ids;
  while (!q.empty()) ids.push_back(q.pop().id);
  CHECK(ids == std::vector<std::size_t>{1, 3, 2, 0});
}

TEST_CASE("setting a timer again moves it, set_earlier only moves it earlier") {
  timer_queue q(3);
  q.set(0, 5.0, 0);
  q.set(1, 4.0, 1);
  q.set(0, 1.0, 0);  // earlier
  CHECK(q.top_time() == 1.0);
  q.set(0, 9.0, 0);  // later
  CHECK(q.top_time() == 4.0);
  q.set_earlier(1, 6.0, 1);  // not earlier: stays at 4
  CHECK(q.top_time() == 4.0);
  q.set_earlier(2, 2.0, 2);  // not set yet: set
  const auto first = q.pop();
  CHECK(first.id == 2);
  CHECK(first.time == 2.0);
  CHECK_FALSE(q.contains(2));
  q.set(2, 3.0, 2);  // a popped timer can be set again
  CHECK(q.pop().id == 2);
  CHECK(q.pop().id == 1);
  CHECK(q.pop().id == 0);
  CHECK(q.empty());
}

TEST_CASE("a removed timer never fires, removing one that is not set does nothing") {
  timer_queue q(4);
  q.set(0, 1.0, 0);
  q.set(1, 2.0, 1);
  q.set(2, 3.0, 2);
  CHECK(q.time_of(1) == 2.0);
  q.remove(0);  // the earliest
  q.remove(3);  // not set
  CHECK_FALSE(q.contains(0));
  CHECK(q.top_time() == 2.0);
  q.remove(2);       // the last entry
  q.set(0, 5.0, 0);  // a removed timer can be set again
  CHECK(q.pop().id == 1);
  CHECK(q.pop().id == 0);
  CHECK(q.empty());
}

TEST_CASE("random moves and removals keep the queue's order (against a brute-force minimum)") {
  constexpr std::size_t n = 64;
  timer_queue q(n);
  std::vector<double> at(n, -1);  // -1: not set
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(n) - 1), when(0, 20);
  for (int step = 0; step < 20000; ++step) {
    const auto action = rng() % 4;
    if (action < 2) {
      const auto id = static_cast<std::size_t>(pick(rng));
      at[id] = when(rng);
      q.set(id, at[id], id);
      continue;
    }
    if (action == 2) {
      const auto id = static_cast<std::size_t>(pick(rng));
      REQUIRE(q.contains(id) == (at[id] >= 0));
      q.remove(id);
      at[id] = -1;
      continue;
    }
    std::size_t best = n;
    for (std::size_t id = 0; id < n; ++id)
      if (at[id] >= 0 && (best == n || at[id] < at[best])) best = id;  // ties: the lower id (= order)
    if (best == n) {
      REQUIRE(q.empty());
      continue;
    }
    const auto fired = q.pop();
    REQUIRE(fired.id == best);
    REQUIRE(fired.time == at[best]);
    at[best] = -1;
  }
}

TEST_CASE("a queue too large for its 32-bit ids is refused") {
  CHECK_THROWS_AS(timer_queue(std::size_t{1} << 32), std::length_error);
}
