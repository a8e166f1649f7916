#pragma once
/// @file
/// Which ranks a Perfetto trace of a step holds, so that it stays bounded at any scale: those
/// asked for (each standing for its class of symmetric ranks), or as many representatives as hold
/// about a budget of intervals together, spread over the ranks; and the trace of those alone.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/sim/result.hpp>
#include <overlap/trace/chrome_trace.hpp>

namespace overlap::trace {

/// The representatives whose ops go into the trace, in rank order: those of the ranks `asked`
/// for, or (none asked) as many of all as hold about `budget` intervals of `r` together. Throws
/// std::invalid_argument naming a rank outside the step.
inline std::vector<int> traced_ranks(const std::vector<int>& asked, const schedule::rank_classes& classes,
                                     const sim::result& r, std::size_t budget = 250'000) {
  std::set<int> out;
  for (const int rank : asked) {
    if (rank < 0 || rank >= classes.world())
      throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the step (0.." +
                                  std::to_string(classes.world() - 1) + ")");
    out.insert(classes.representative[static_cast<std::size_t>(rank)]);
  }
  if (!asked.empty()) return {out.begin(), out.end()};
  const std::vector<int> all = classes.representatives();
  if (all.empty()) return {};
  const std::size_t per_rank = r.intervals.size() / all.size() + 1;
  const std::size_t fit = std::clamp<std::size_t>(budget / per_rank, 1, all.size());
  for (std::size_t i = 0; i < fit; ++i) out.insert(all[i * all.size() / fit]);
  return {out.begin(), out.end()};
}

/// The Perfetto trace of the programs and intervals of `ranks` (sorted, as `traced_ranks` gives
/// them) alone.
inline void write_chrome_trace_of(std::ostream& os, const std::vector<schedule::program>& step, const sim::result& r,
                                  const schedule::rank_classes& classes, const std::vector<int>& ranks) {
  const auto in = [&](int rank) { return std::binary_search(ranks.begin(), ranks.end(), rank); };
  std::vector<schedule::program> chosen;
  for (const schedule::program& p : step)
    if (in(p.rank)) chosen.push_back(p);
  sim::result part = r;
  part.intervals.clear();
  for (const sim::interval& iv : r.intervals)
    if (in(iv.rank)) part.intervals.push_back(iv);
  write_chrome_trace(os, chosen, part, &classes);
}

}  // namespace overlap::trace
