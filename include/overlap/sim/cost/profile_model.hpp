#pragma once
/// @file
/// Kernel times read from a machine profile (`profile.hpp`), one model for every op:
///
/// - **Dense GEMMs.** Each table time is divided by a base, max(floor, flops / best rate): the
///   floor is the median time of the grid's GEMMs too small to leave it (whose flops at the best
///   rate take less than the table's shortest time), the best rate the table's highest. The
///   quotient (how far a shape is from its roofline) is read between grid points by multilinear
///   interpolation in log m, log n, log k and held at the grid's edge beyond it, so a shape past
///   the grid keeps the efficiency of the nearest measured one. Dividing by the base before
///   interpolating keeps the knee between fixed cost and work where it is: interpolating the
///   times themselves bends it over a whole grid step (a shape at the knee came out 1.4x too
///   slow with every other grid point dropped; 1.29x this way).
/// - **The floor is the caller's, not the GPU's.** Each time was taken between two CUDA events
///   around one eagerly issued call. Where the GPU finishes before the host has issued the call,
///   the events time the host: a 1024^3 GEMM "takes" 38 us in the H200 sweep, 57 TFLOP/s, where
///   cuBLAS runs it at 177 TFLOP/s on an H100 timed back to back (machine.hpp). So the model
///   answers two questions: what an eager caller measures (`gemm_measured_us`: the table as it
///   is, which the measured rows are held to), and how long the kernel holds the GPU in a step
///   whose host runs ahead (`gemm_us`: the same quotient over a base whose floor is the GPU's
///   own, the analytic estimate the caller gives, at most the table's floor). The two agree
///   wherever the work is past the floor; below it the simulator's host model (launch cost per
///   op) decides whether the host or the GPU sets the pace.
/// - **Grouped GEMMs** (routed experts: `groups` products of m x k by k x n, each with its own
///   weights): the compute of the dense GEMM of the same rows (groups x m, n, k) and the HBM
///   traffic of every group's operands and result, combined as sqrt(compute^2 + memory^2):
///   weight reads and math overlap only in part. The profile's measured grouped GEMMs then give
///   a correction by tokens per group (the geometric mean of measured / model over its entries
///   at each token count, read in log space between them and held beyond), computed at the
///   profile's own memory rate and without the power cap, the conditions they were measured in.
/// - **Attention**: per backend, forward and backward tables over (sequence, heads) read the
///   same way against their own floor and best rate; batch and heads are interchangeable
///   (groups = batch x heads), the head size scales the flops.
/// - **The power limit.** A training step keeps the GPU at its power limit, where the SM clock
///   drops: no tensor-core kernel then runs faster than the profile's sustained rate (a long run
///   of large GEMMs). The tables were measured in short runs, so the cap applies on top of them
///   when the machine says the load is sustained.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <overlap/sim/machine/profile.hpp>

namespace overlap::sim {

namespace detail {

/// Where `x` falls on an ascending axis in log space: the grid points on either side and the
/// weight of the upper one. Outside the axis, its end point alone.
struct log_position {
  std::size_t lo = 0, hi = 0;
  double w = 0;
};
inline log_position locate(const std::vector<std::int64_t>& axis, double x) {
  if (!(x > static_cast<double>(axis.front()))) return {0, 0, 0};
  if (!(x < static_cast<double>(axis.back()))) return {axis.size() - 1, axis.size() - 1, 0};
  const auto hi =
      static_cast<std::size_t>(std::upper_bound(axis.begin(), axis.end(), x,
                                                [](double v, std::int64_t a) { return v < static_cast<double>(a); }) -
                               axis.begin());
  const double a = std::log(static_cast<double>(axis[hi - 1])), b = std::log(static_cast<double>(axis[hi]));
  return {hi - 1, hi, (std::log(x) - a) / (b - a)};
}

/// A time table's base: max(floor, flops / best rate), from the table's own points.
struct roofline_base {
  double floor_us = 0;
  double flops_per_us = 0;
  double of(double flops) const { return std::max(floor_us, flops / flops_per_us); }
  /// The same base with the GPU's own floor, `gpu_us` (at most this floor) in place of it.
  double gpu(double flops, double gpu_us) const { return std::max(std::min(gpu_us, floor_us), flops / flops_per_us); }

  /// From (flops, us) pairs: the best rate, then the median time of the points whose flops at
  /// that rate take less than the shortest time (none: no floor).
  static roofline_base fit(const std::vector<std::pair<double, double>>& points) {
    roofline_base b;
    double shortest = std::numeric_limits<double>::infinity();
    for (const auto& [flops, us] : points) {
      b.flops_per_us = std::max(b.flops_per_us, flops / us);
      shortest = std::min(shortest, us);
    }
    std::vector<double> small;
    for (const auto& [flops, us] : points)
      if (flops / b.flops_per_us < shortest) small.push_back(us);
    if (!small.empty()) {
      std::sort(small.begin(), small.end());
      const std::size_t h = small.size() / 2;
      b.floor_us = small.size() % 2 ? small[h] : (small[h - 1] + small[h]) / 2;
    }
    return b;
  }
};

}  // namespace detail

class profile_model {
 public:
  /// `memory_bytes_per_us`: the machine's rate for memory-bound work (its own HBM, which may not
  /// be the profiled GPU's); `sustained`: cap tensor-core rates at the profile's sustained one;
  /// `attention_backend`: the attention table to read (none of that name: `has_attention()` is
  /// false). Throws std::invalid_argument listing the profile's problems.
  profile_model(std::shared_ptr<const profile> p, double memory_bytes_per_us, bool sustained,
                const std::string& attention_backend)
      : p_(std::move(p)), memory_rate_(memory_bytes_per_us) {
    if (!p_) throw std::invalid_argument("profile_model: no profile");
    if (const auto found = problems(*p_); !found.empty())
      detail::throw_problems("machine profile '" + p_->gpu + "'", found);
    if (!(std::isfinite(memory_rate_) && memory_rate_ > 0))
      throw std::invalid_argument("profile_model: the memory rate must be finite and > 0");
    cap_ = sustained && p_->sustained_flops_per_us > 0 ? p_->sustained_flops_per_us
                                                       : std::numeric_limits<double>::infinity();
    const gemm_table& g = p_->gemm;
    std::vector<std::pair<double, double>> points;
    for (std::size_t i = 0; i < g.m.size(); ++i)
      for (std::size_t j = 0; j < g.n.size(); ++j)
        for (std::size_t l = 0; l < g.k.size(); ++l) points.emplace_back(flops(g.m[i], g.n[j], g.k[l]), g.at(i, j, l));
    gemm_base_ = detail::roofline_base::fit(points);
    gemm_log_ratio_.reserve(points.size());
    for (const auto& [f, us] : points) gemm_log_ratio_.push_back(std::log(us / gemm_base_.of(f)));
    if (const attention_table* a = p_->attention_of(attention_backend)) attention_.emplace(*a);
    grouped_corrections();
  }

  const sim::profile& measured() const { return *p_; }

  /// A dense GEMM of m x k by k x n on the whole GPU, as an eager caller measures it.
  double gemm_measured_us(double m, double n, double k) const {
    return gemm_base_.of(flops(m, n, k)) * gemm_ratio(m, n, k);
  }
  /// The same GEMM's time on the GPU, in a step at the machine's load; `analytic_us`: the GPU's
  /// own estimate below the floor (0: none, the roofline).
  double gemm_us(double m, double n, double k, double analytic_us = 0) const {
    const double f = flops(m, n, k);
    return capped(gemm_base_.gpu(f, analytic_us) * gemm_ratio(m, n, k), f);
  }

  /// `groups` products of m x k by k x n, each with its own weights, `tokens` rows per group
  /// (m for a forward or input gradient, k for a weight gradient), on the GPU.
  double grouped_us(double groups, double m, double n, double k, double tokens) const {
    return grouped_model_us(groups, m, n, k, memory_rate_, true) * correction(tokens);
  }

  /// Whether the profile has an attention table for the machine's backend.
  bool has_attention() const { return attention_.has_value(); }
  /// Causal attention over `seq` tokens for `groups` (batch x heads) of `head_dim`, forward or
  /// backward, as an eager caller measures it (needs `has_attention()`).
  double attention_measured_us(double seq, double groups, double head_dim, bool backward) const {
    const double f = attention_flops(seq, groups, head_dim, backward);
    return attention_base(backward).of(f) * attention_ratio(seq, groups, backward);
  }
  /// The same on the GPU, in a step at the machine's load (`analytic_us` as for `gemm_us`).
  double attention_us(double seq, double groups, double head_dim, bool backward, double analytic_us = 0) const {
    const double f = attention_flops(seq, groups, head_dim, backward);
    return capped(attention_base(backward).gpu(f, analytic_us) * attention_ratio(seq, groups, backward), f);
  }

  /// A tensor-core kernel known only by its flops, on the GPU: the dense table's best rate.
  double flops_us(double f) const { return capped(gemm_base_.gpu(f, 0), f); }

 private:
  struct attention_fit {
    explicit attention_fit(const attention_table& t) : table(t) {
      std::vector<std::pair<double, double>> forward_points, backward_points;
      for (std::size_t i = 0; i < t.seq.size(); ++i)
        for (std::size_t j = 0; j < t.heads.size(); ++j) {
          const double f = 2.0 * static_cast<double>(t.seq[i]) * static_cast<double>(t.seq[i]) *
                           static_cast<double>(t.heads[j]) * static_cast<double>(t.head_dim);
          forward_points.emplace_back(f, t.forward_us[i * t.heads.size() + j]);
          backward_points.emplace_back(2.5 * f, t.backward_us[i * t.heads.size() + j]);
        }
      forward = detail::roofline_base::fit(forward_points);
      backward = detail::roofline_base::fit(backward_points);
      for (const auto& [f, us] : forward_points) forward_log_ratio.push_back(std::log(us / forward.of(f)));
      for (const auto& [f, us] : backward_points) backward_log_ratio.push_back(std::log(us / backward.of(f)));
    }
    attention_table table;
    detail::roofline_base forward, backward;
    std::vector<double> forward_log_ratio, backward_log_ratio;
  };

  static double flops(double m, double n, double k) { return 2 * m * n * k; }
  static double attention_flops(double seq, double groups, double head_dim, bool backward) {
    return (backward ? 2.5 : 1.0) * 2 * seq * seq * groups * head_dim;
  }
  double capped(double us, double f) const { return std::max(us, f / cap_); }

  /// The table's time over its base at (m, n, k), read between and beyond the grid.
  double gemm_ratio(double m, double n, double k) const {
    const gemm_table& g = p_->gemm;
    const detail::log_position a = detail::locate(g.m, m), b = detail::locate(g.n, n), c = detail::locate(g.k, k);
    const auto at = [&](std::size_t i, std::size_t j, std::size_t l) {
      return gemm_log_ratio_[(i * g.n.size() + j) * g.k.size() + l];
    };
    const auto along_k = [&](std::size_t i, std::size_t j) {
      return (1 - c.w) * at(i, j, c.lo) + c.w * at(i, j, c.hi);
    };
    const auto along_n = [&](std::size_t i) { return (1 - b.w) * along_k(i, b.lo) + b.w * along_k(i, b.hi); };
    return std::exp((1 - a.w) * along_n(a.lo) + a.w * along_n(a.hi));
  }
  const detail::roofline_base& attention_base(bool backward) const {
    return backward ? attention_->backward : attention_->forward;
  }
  double attention_ratio(double seq, double groups, bool backward) const {
    const attention_fit& a = *attention_;
    const detail::log_position s = detail::locate(a.table.seq, seq), h = detail::locate(a.table.heads, groups);
    const std::vector<double>& log_ratio = backward ? a.backward_log_ratio : a.forward_log_ratio;
    const auto at = [&](std::size_t i, std::size_t j) { return log_ratio[i * a.table.heads.size() + j]; };
    return std::exp((1 - s.w) * ((1 - h.w) * at(s.lo, h.lo) + h.w * at(s.lo, h.hi)) +
                    s.w * ((1 - h.w) * at(s.hi, h.lo) + h.w * at(s.hi, h.hi)));
  }

  /// The grouped GEMM without the measured correction, at `memory_rate` bytes/us of HBM (bf16
  /// operands and result) and with or without the power cap.
  double grouped_model_us(double groups, double m, double n, double k, double memory_rate, bool cap) const {
    const double rows = groups * m;
    const double compute = cap ? gemm_us(rows, n, k) : gemm_base_.gpu(flops(rows, n, k), 0) * gemm_ratio(rows, n, k);
    const double memory = 2 * groups * (m * k + k * n + m * n) / memory_rate;
    return std::hypot(compute, memory);
  }

  /// Measured over modelled grouped GEMMs, as a curve over tokens per group.
  void grouped_corrections() {
    std::map<std::int64_t, std::pair<double, int>> by_tokens;  // log ratio sum, count
    for (const grouped_gemm_entry& e : p_->grouped_gemm) {
      const double model =
          grouped_model_us(static_cast<double>(e.groups), static_cast<double>(e.m), static_cast<double>(e.n),
                           static_cast<double>(e.k), p_->memory_bytes_per_us, false);
      auto& [sum, count] = by_tokens[e.m];
      sum += std::log(e.us / model);
      ++count;
    }
    for (const auto& [tokens, mean] : by_tokens) {
      correction_tokens_.push_back(tokens);
      correction_log_.push_back(mean.first / mean.second);
    }
  }
  double correction(double tokens) const {
    if (correction_tokens_.empty()) return 1;
    const detail::log_position t = detail::locate(correction_tokens_, tokens);
    return std::exp((1 - t.w) * correction_log_[t.lo] + t.w * correction_log_[t.hi]);
  }

  std::shared_ptr<const sim::profile> p_;
  double memory_rate_;
  double cap_ = std::numeric_limits<double>::infinity();
  detail::roofline_base gemm_base_;
  std::vector<double> gemm_log_ratio_;
  std::optional<attention_fit> attention_;
  std::vector<std::int64_t> correction_tokens_;
  std::vector<double> correction_log_;
};

}  // namespace overlap::sim
