// trace/traced_ranks.hpp: which ranks a trace holds, on values.
#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>
#include <vector>

#include <overlap/trace/traced_ranks.hpp>

namespace {

namespace ov = overlap;

/// 8 ranks in two classes: even ranks stand for 0, odd ones for 1.
ov::schedule::rank_classes two_classes() {
  ov::schedule::rank_classes c;
  for (int r = 0; r < 8; ++r) c.representative.push_back(r % 2);
  return c;
}

}  // namespace

TEST_CASE("traced_ranks: the ranks asked for, each as its class's representative, sorted and once") {
  const ov::sim::result r;
  CHECK(ov::trace::traced_ranks({5, 2, 7, 0}, two_classes(), r) == std::vector<int>{0, 1});
  CHECK(ov::trace::traced_ranks({6}, two_classes(), r) == std::vector<int>{0});
}

TEST_CASE("traced_ranks: a rank outside the step is refused, naming it and the step's ranks") {
  const ov::sim::result r;
  CHECK_THROWS_WITH_AS(ov::trace::traced_ranks({8}, two_classes(), r), "rank 8 is not in the step (0..7)",
                       std::invalid_argument);
  CHECK_THROWS_AS(ov::trace::traced_ranks({-1}, two_classes(), r), std::invalid_argument);
}

TEST_CASE("traced_ranks: none asked, as many representatives as the interval budget holds") {
  ov::sim::result r;
  for (int rank : {0, 1})
    for (int op = 0; op < 10; ++op) r.intervals.push_back({rank, 0, op, 0, 1});
  CHECK(ov::trace::traced_ranks({}, two_classes(), r) == std::vector<int>{0, 1});
  CHECK(ov::trace::traced_ranks({}, two_classes(), r, /*budget=*/11) == std::vector<int>{0});
  CHECK(ov::trace::traced_ranks({}, ov::schedule::rank_classes{}, r).empty());
}
