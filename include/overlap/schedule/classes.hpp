#pragma once
/// @file
/// The step of a layout generated once per class of symmetric ranks (program/rank_classes.hpp).
///
/// Which ranks are symmetric is decided from the layout by colour refinement, not by a formula:
/// ranks start in one class per cp position and pipeline stage (and per tp position where the tp
/// group leaves its node) and per placement (how many members of each of its groups sit on other
/// nodes, whether each pipeline neighbour does), and a class is split until the members of each
/// of its ranks' groups (tp, dp, pipeline, ep, expert-dp, embedding), taken in order, are of the
/// same classes for every rank of it. What breaks symmetry so stays apart: every pipeline stage
/// (the first embeds, the last has the head, each has its own warm-up) and placements that
/// differ, e.g. a stage that straddles two nodes. The tp positions of a group inside one node are
/// one class: their programs are one program turned along the group (TP overlap's ring sends
/// to the rank ahead and receives from the one behind; rendezvous.hpp pairs the representative's
/// sends with its own receives). The representative of a class is its lowest rank (tp position
/// 0 of data-parallel replica 0 on a regular layout); where an absent member's representative would not share a
/// rendezvous with the representative, that member gets a class of its own and the classes are refined again, so
/// `class_problems` holds for the representatives' programs. The tests check the classes structurally (`asymmetries`)
/// and the class simulation against the full one.

#include <algorithm>
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/program/rank_classes.hpp>
#include <overlap/schedule/step.hpp>

namespace overlap::schedule {

namespace detail {

/// The kinds of group a rank of `L` may rendezvous in: tp, dp, pipeline, ep, expert-dp,
/// embedding (some may not be used by a program: a finer partition, still sound).
enum class group_kind { tp, dp, pipeline, ep, expert_dp, embedding };
inline std::vector<group_kind> group_kinds(const layout& L, bool moe) {
  std::vector<group_kind> out{group_kind::tp, group_kind::dp, group_kind::pipeline};
  if (moe && L.ep() > 1) {
    out.push_back(group_kind::ep);
    out.push_back(group_kind::expert_dp);
  }
  if (L.pp() > 1) out.push_back(group_kind::embedding);
  return out;
}
inline group group_of(const layout& L, const place& p, group_kind k) {
  switch (k) {
    case group_kind::tp: return L.tensor_parallel(p);
    case group_kind::dp: return L.data_parallel(p);
    case group_kind::pipeline: return L.pipeline(p);
    case group_kind::ep: return L.expert_parallel(p);
    case group_kind::expert_dp: return L.expert_data_parallel(p);
    case group_kind::embedding: return L.embedding(p);
  }
  return {};
}
/// The groups of `p`, each in communicator order, in `group_kinds` order.
inline std::vector<group> groups_of(const layout& L, const place& p, bool moe) {
  std::vector<group> out;
  for (const group_kind k : group_kinds(L, moe)) out.push_back(group_of(L, p, k));
  return out;
}

/// Every group of `L` once, and each rank's group of each kind by index: a dp group of 32,768
/// ranks is built once, not once per member (which took time and memory quadratic in dp).
struct group_table {
  std::vector<group> groups;
  std::vector<int> of_rank;  ///< of_rank[rank * kinds + i]: the rank's group of kind i
  std::size_t kinds = 0;
  int of(int rank, std::size_t kind) const { return of_rank[static_cast<std::size_t>(rank) * kinds + kind]; }
};
inline group_table all_groups(const layout& L, bool moe) {
  const std::vector<group_kind> kinds = group_kinds(L, moe);
  group_table t;
  t.kinds = kinds.size();
  t.of_rank.assign(static_cast<std::size_t>(L.world()) * t.kinds, -1);
  // Each member of a group has it as its group of that kind; a rank need not be a member of its
  // own (a middle stage's embedding group is its pipeline's ends'), so groups are told apart by
  // name.
  std::map<std::string, int> by_name;
  for (int r = 0; r < L.world(); ++r)
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      if (t.of(r, i) >= 0) continue;
      group g = group_of(L, L.at(r), kinds[i]);
      const auto [it, added] = by_name.try_emplace(g.name, static_cast<int>(t.groups.size()));
      t.of_rank[static_cast<std::size_t>(r) * t.kinds + i] = it->second;
      if (!added) continue;
      for (const int m : g.ranks) t.of_rank[static_cast<std::size_t>(m) * t.kinds + i] = it->second;
      t.groups.push_back(std::move(g));
    }
  return t;
}

/// Colours of the ranks of `L`: equal colours for ranks that are symmetric, given `split` (ranks
/// that must be apart from every other, with colour -1 - rank as their seed). A rank's key holds
/// each of its groups' member colours in order; equal sequences are numbered once per group (run
/// lengths, so that a uniform dp group is one pair), the same partition as writing them out per
/// rank, at a cost linear in the ranks.
inline std::vector<int> refine(const layout& L, bool moe, int gpus_per_node, const std::vector<char>& split) {
  const int world = L.world();
  const auto node = [&](int r) { return node_of(r, gpus_per_node); };
  const group_table t = all_groups(L, moe);
  const auto number = [](const std::vector<std::vector<long>>& keys) {
    std::map<std::vector<long>, int> ids;
    std::vector<int> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(ids.emplace(k, static_cast<int>(ids.size())).first->second);
    return std::pair{out, ids.size()};
  };
  // Placement: how many of each group's members sit on each node.
  std::vector<std::map<int, long>> on_node(t.groups.size());
  for (std::size_t g = 0; g < t.groups.size(); ++g)
    for (const int m : t.groups[g].ranks) ++on_node[g][node(m)];
  std::vector<std::vector<long>> keys(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const place p = L.at(r);
    auto& k = keys[static_cast<std::size_t>(r)];
    // Tp positions apart only where their group leaves the node: inside one, a tp group's
    // members are one program turned along the ring (rank_classes.hpp).
    const bool tp_in_node = on_node[static_cast<std::size_t>(t.of(r, 0))].size() == 1;
    k = {split[static_cast<std::size_t>(r)] ? -1L - r : 0L, tp_in_node ? 0L : p.tp, p.cp, p.stage};
    for (std::size_t i = 0; i < t.kinds; ++i) {
      const auto g = static_cast<std::size_t>(t.of(r, i));
      const auto here = on_node[g].find(node(r));
      const auto size = static_cast<long>(t.groups[g].ranks.size());
      k.push_back(size);
      k.push_back(size - (here == on_node[g].end() ? 0 : here->second));
    }
    for (const int s : {p.stage - 1, p.stage + 1})
      k.push_back(s < 0 || s >= L.pp() ? -1 : node(L.rank({p.tp, p.cp, p.dp, s})) != node(r));
  }
  auto [colour, count] = number(keys);
  for (;;) {
    // Each group's member colours in order, as runs (colour, length), numbered.
    std::vector<std::vector<long>> runs(t.groups.size());
    for (std::size_t g = 0; g < t.groups.size(); ++g)
      for (const int m : t.groups[g].ranks) {
        const long c = colour[static_cast<std::size_t>(m)];
        auto& seq = runs[g];
        if (!seq.empty() && seq[seq.size() - 2] == c)
          ++seq.back();
        else
          seq.insert(seq.end(), {c, 1});
      }
    const std::vector<int> sequence = number(runs).first;
    for (int r = 0; r < world; ++r) {
      auto& k = keys[static_cast<std::size_t>(r)];
      k = {colour[static_cast<std::size_t>(r)]};
      for (std::size_t i = 0; i < t.kinds; ++i) k.push_back(sequence[static_cast<std::size_t>(t.of(r, i))]);
    }
    auto [next, next_count] = number(keys);
    colour = next;
    if (next_count == count) return colour;
    count = next_count;
  }
}

}  // namespace detail

/// The classes of symmetric ranks of the step `compose_step(s, r, w, on)` generates, for a
/// machine of `gpus_per_node` GPUs per node (placement changes the cost of a collective), with
/// representatives chosen so that their programs stand for the step (`class_problems` is empty
/// for them). Throws as compose_step does.
inline rank_classes symmetric_classes(const settings& s, const resolved_settings& r, const workload& w,
                                      int gpus_per_node, family_set on = {}) {
  const detail::step_shape k = detail::shape_of(s, r, w, on);
  const layout& L = k.ranks;
  const int world = L.world();
  std::vector<char> split(static_cast<std::size_t>(world), 0);
  for (;;) {
    const std::vector<int> colour = detail::refine(L, k.moe, gpus_per_node, split);
    std::vector<int> lowest(static_cast<std::size_t>(world), -1);  // per colour
    rank_classes c;
    c.representative.resize(static_cast<std::size_t>(world));
    for (int x = 0; x < world; ++x) {
      int& rep = lowest[static_cast<std::size_t>(colour[static_cast<std::size_t>(x)])];
      if (rep < 0) rep = x;
      c.representative[static_cast<std::size_t>(x)] = rep;
    }
    // An absent member whose representative is not in the group, or an absent pipeline
    // neighbour, becomes a representative of its own.
    bool changed = false;
    for (const int rep : c.representatives()) {
      const place p = L.at(rep);
      for (const group& g : detail::groups_of(L, p, k.moe)) {
        const bool pipeline = g.name.starts_with("pp");
        std::vector<int> members = g.ranks;  // sorted: membership by binary search, not a scan per member
        std::sort(members.begin(), members.end());
        for (std::size_t i = 0; i < g.ranks.size(); ++i) {
          const int m = g.ranks[i];
          if (c.is_representative(m)) continue;
          const bool neighbour = pipeline && (static_cast<int>(i) == p.stage - 1 || static_cast<int>(i) == p.stage + 1);
          const int mrep = c.representative[static_cast<std::size_t>(m)];
          const bool shares = !pipeline && std::binary_search(members.begin(), members.end(), mrep);
          if ((pipeline && neighbour) || (!pipeline && !shares)) {
            split[static_cast<std::size_t>(m)] = 1;
            changed = true;
          }
        }
      }
    }
    if (!changed) return c;
  }
}

/// The programs of the representatives of `classes` (in rank order): the step `compose_step(s,
/// r, w, on)` generates, once per class. `classes` must cover the layout's ranks.
inline std::vector<program> compose_step(const settings& s, const resolved_settings& r, const workload& w,
                                         const rank_classes& classes, family_set on = {}) {
  const detail::step_shape k = detail::shape_of(s, r, w, on);
  if (classes.world() != k.ranks.world())
    throw std::invalid_argument("compose_step: the class map has " + std::to_string(classes.world()) +
                                " ranks but the layout " + std::to_string(k.ranks.world()));
  const std::vector<int> representatives = classes.representatives();
  detail::check_generated(k, static_cast<std::int64_t>(representatives.size()));
  std::vector<program> step;
  step.reserve(representatives.size());
  for (const int rank : representatives)
    step.push_back(detail::rank_builder(k, s, r, w, rank, step.empty() ? nullptr : &step.back()).build());
  return step;
}

/// A step generated once per class: the classes and the representatives' programs.
struct class_step {
  rank_classes classes;
  std::vector<program> representatives;
};

/// `symmetric_classes` and the representatives' programs of one step.
inline class_step compose_class_step(const settings& s, const resolved_settings& r, const workload& w,
                                     int gpus_per_node, family_set on = {}) {
  class_step out{symmetric_classes(s, r, w, gpus_per_node, on), {}};
  out.representatives = compose_step(s, r, w, out.classes, on);
  return out;
}

}  // namespace overlap::schedule
