#pragma once
/// @file
/// Which communication groups of a layout straddle NVLink domains under the machine's placement
/// (`machine::gpus_per_node`: a job's ranks fill that many GPUs of each domain, in rank order),
/// and what they fall back to. A tensor- or expert-parallel group split over two domains runs its
/// collectives over the NIC, and every rank of the step waits for it; pipeline peers in two
/// domains send and receive over the NIC. No upstream tool tells a user this.

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <overlap/schedule/layout.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace overlap::sim {

/// The groups of one kind and how many of them straddle domains.
struct straddling_groups {
  std::string_view kind;           ///< "tp", "ep" or "pp" (pipeline peers)
  int size = 0;                    ///< ranks a group holds
  int groups = 0;                  ///< groups of the kind in the layout
  int straddling = 0;              ///< of them, those with ranks in two or more domains
  std::vector<std::string> names;  ///< the first few of those (their communicator names)
};

namespace detail {
inline bool spans_domains(const schedule::group& g, int ranks_per_domain) {
  for (const int r : g.ranks)
    if (r / ranks_per_domain != g.ranks.front() / ranks_per_domain) return true;
  return false;
}
inline void count_group(straddling_groups& out, const schedule::group& g, int ranks_per_domain, std::size_t named) {
  ++out.groups;
  if (!spans_domains(g, ranks_per_domain)) return;
  ++out.straddling;
  if (out.names.size() < named) out.names.push_back(g.name);
}
}  // namespace detail

/// Per kind (tp, ep, pp: only those of more than one rank), how many groups of `L` have ranks in
/// more than one domain of `ranks_per_domain` consecutive ranks; `named` of them by name.
inline std::vector<straddling_groups> straddling(const schedule::layout& L, int ranks_per_domain,
                                                 std::size_t named = 3) {
  std::vector<straddling_groups> out;
  if (ranks_per_domain < 1) return out;
  // The groups of one kind: one for every `step`-th rank below `below`, by `group_of` its place.
  const auto count = [&](std::string_view kind, int size, int below, int step, auto group_of) {
    if (size <= 1) return;
    straddling_groups& k = out.emplace_back(straddling_groups{kind, size, 0, 0, {}});
    for (int r = 0; r < below; r += step) detail::count_group(k, group_of(L.at(r)), ranks_per_domain, named);
  };
  count("tp", L.tp(), L.world(), L.tp(), [&](const schedule::place& p) { return L.tensor_parallel(p); });
  count("ep", L.ep(), L.world(), L.ep(), [&](const schedule::place& p) { return L.expert_parallel(p); });
  count("pp", L.pp(), L.stage_size(), 1, [&](const schedule::place& p) { return L.pipeline(p); });
  return out;
}

/// One line per kind of group that straddles domains on `m`: which groups, what they fall back to
/// and at what bandwidth against NVLink's, and how to keep them inside a domain where a size can.
inline std::vector<std::string> placement_notes(const schedule::layout& L, const machine& m) {
  std::vector<std::string> out;
  const int block = m.gpus_per_node, domain = m.domain_gpus();
  char rates[160];
  std::snprintf(rates, sizeof rates, "over the NIC at %.0f GB/s a GPU against NVLink's %.0f (%.1fx slower)",
                m.network_bytes_per_us / 1e3, m.nvlink_bytes_per_us / 1e3,
                m.network_bytes_per_us > 0 ? m.nvlink_bytes_per_us / m.network_bytes_per_us : 0.0);
  const std::string where = block < domain ? std::to_string(block) + " GPUs of each " + std::to_string(domain) +
                                                 "-GPU NVLink domain hold the job's ranks, in rank order"
                                           : "NVLink domains of " + std::to_string(domain) + " GPUs";
  for (const straddling_groups& k : straddling(L, block)) {
    if (k.straddling == 0) continue;
    std::string names;
    for (const std::string& n : k.names) names += (names.empty() ? "" : ", ") + n;
    if (k.straddling > static_cast<int>(k.names.size())) names += ", ...";
    const std::string count = std::to_string(k.straddling) + " of " + std::to_string(k.groups);
    std::string line;
    if (k.kind == "pp") {
      line = count + " pipelines (" + names + ") have stages in different domains (" + where +
             "): their send/recv run " + rates;
    } else {
      line = count + " " + std::string(k.kind) + " groups of " + std::to_string(k.size) + " (" + names +
             ") span two or more domains (" + where + "): their " +
             (k.kind == "tp" ? "all-gathers and reduce-scatters" : "dispatch and combine all-to-alls") + " run " +
             rates;
      if (k.size <= block)
        line += "; a group size that divides " + std::to_string(block) + " keeps each group in one domain";
      else if (k.size <= domain && block < domain)
        line += "; filling whole domains (" + std::to_string(domain) + " GPUs) would hold a group";
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace overlap::sim
