#pragma once
/// @file
/// The ranks of a tp x cp x dp x pp layout and the groups they communicate in, in Megatron's rank
/// order: tp fastest, then cp, then dp, then pp. Experts tile the tp x cp x dp ranks of a stage
/// (expert_tensor_parallel_size 1): an ep group is `ep` consecutive ranks of the stage, the
/// expert-data-parallel group the ranks at the same place in their ep groups. Every group's
/// communicator name is made here, once.

#include <string>
#include <vector>

namespace overlap::schedule {

/// A communicator: its name and global ranks (communicator rank i is `ranks[i]`).
struct group {
  std::string name;
  std::vector<int> ranks;
};

/// Where a global rank sits.
struct place {
  int tp = 0, cp = 0, dp = 0, stage = 0;
};

class layout {
 public:
  /// Sizes must be positive and `ep` must divide tp x cp x dp (compose_step checks).
  constexpr layout(int tp, int cp, int dp, int pp, int ep) : tp_(tp), cp_(cp), dp_(dp), pp_(pp), ep_(ep) {}

  constexpr int tp() const { return tp_; }
  constexpr int cp() const { return cp_; }
  constexpr int dp() const { return dp_; }
  constexpr int pp() const { return pp_; }
  constexpr int ep() const { return ep_; }
  constexpr int world() const { return tp_ * cp_ * dp_ * pp_; }
  /// Ranks of one pipeline stage.
  constexpr int stage_size() const { return tp_ * cp_ * dp_; }

  constexpr int rank(const place& p) const { return p.tp + tp_ * (p.cp + cp_ * (p.dp + dp_ * p.stage)); }
  constexpr place at(int rank) const {
    return {rank % tp_, rank / tp_ % cp_, rank / (tp_ * cp_) % dp_, rank / stage_size()};
  }

  group tensor_parallel(const place& p) const {
    return make(
        "tp" + where(p, false, true, true, true), [&](int k) { return with(p, k, p.cp, p.dp, p.stage); }, tp_);
  }
  group data_parallel(const place& p) const {
    return make(
        "dp" + where(p, true, true, false, true), [&](int k) { return with(p, p.tp, p.cp, k, p.stage); }, dp_);
  }
  /// The stages of `p`'s pipeline, first to last.
  group pipeline(const place& p) const {
    return make(
        "pp" + where(p, true, true, true, false), [&](int k) { return with(p, p.tp, p.cp, p.dp, k); }, pp_);
  }
  /// The ep group of `p`: `ep` consecutive ranks of its stage.
  group expert_parallel(const place& p) const {
    const int x = index_in_stage(p);
    return make(
        "ep.s" + std::to_string(p.stage) + ".g" + std::to_string(x / ep_),
        [&](int k) { return p.stage * stage_size() + x / ep_ * ep_ + k; }, ep_);
  }
  /// The ranks of `p`'s stage at `p`'s place in their ep groups (the experts' data parallelism).
  group expert_data_parallel(const place& p) const {
    const int x = index_in_stage(p);
    return make(
        "edp.s" + std::to_string(p.stage) + ".e" + std::to_string(x % ep_),
        [&](int k) { return p.stage * stage_size() + x % ep_ + k * ep_; }, stage_size() / ep_);
  }
  /// A rank's place for people: "pp1 tp0 dp4", with "cp" and "ep" (its place in its ep group)
  /// where those sizes exceed 1.
  std::string coordinates(int rank) const {
    const place p = at(rank);
    std::string text = "pp" + std::to_string(p.stage) + " tp" + std::to_string(p.tp);
    if (cp_ > 1) text += " cp" + std::to_string(p.cp);
    text += " dp" + std::to_string(p.dp);
    if (ep_ > 1) text += " ep" + std::to_string(index_in_stage(p) % ep_);
    return text;
  }
  /// The first and last stage of `p`'s pipeline: the shared embedding's gradient all-reduce.
  group embedding(const place& p) const {
    group g = make(
        "embd" + where(p, true, true, true, false),
        [&](int k) { return with(p, p.tp, p.cp, p.dp, k == 0 ? 0 : pp_ - 1); }, 2);
    return g;
  }

 private:
  constexpr int index_in_stage(const place& p) const { return p.tp + tp_ * (p.cp + cp_ * p.dp); }
  constexpr int with(const place&, int t, int c, int d, int s) const { return rank({t, c, d, s}); }
  template <class Rank>
  static group make(std::string name, Rank rank_of, int count) {
    group g{std::move(name), {}};
    for (int k = 0; k < count; ++k) g.ranks.push_back(rank_of(k));
    return g;
  }
  /// ".s1.t0.d2": the coordinates that tell this group from the others of its kind.
  std::string where(const place& p, bool t, bool c, bool d, bool s) const {
    std::string text;
    if (s) text += ".s" + std::to_string(p.stage);
    if (t) text += ".t" + std::to_string(p.tp);
    if (c && cp_ > 1) text += ".c" + std::to_string(p.cp);
    if (d) text += ".d" + std::to_string(p.dp);
    return text;
  }

  int tp_, cp_, dp_, pp_, ep_;
};

}  // namespace overlap::schedule
