#pragma once
/// @file
/// The analytic cost model (`cost_model.hpp` is the interface): how long an op takes on a model of
/// the machine. With a machine profile (`machine::profile`: measured kernel times, see
/// `profile_model.hpp`) compute comes from it: dense GEMMs from its GEMM table, routed experts'
/// grouped GEMMs from that table, the memory rate and its measured grouped GEMMs, core attention
/// from its attention table, each on the whole GPU; on fewer SMs (communication kernels hold the
/// rest) a time stretches as the analytic model's does. Without a profile, the analytic model: a
/// GEMM's time from its tiles and waves on the SMs it gets (at the machine's achieved GEMM
/// efficiency and sustained clock), grouped GEMMs and core attention from their flops at their
/// kernels' achieved efficiency, other compute from flops or bytes (whichever bounds it). Either
/// way the memory-bound kernels of a GEMM's module (norm, activation) run at the memory rate
/// beside it, and communication comes from ring / all-to-all / p2p formulas over the links its
/// members actually use.
///
/// `analytic_cost_model` is final: the simulator works its compute times out once per distinct
/// inputs (`compute_reads_inputs_only`). A model that changes some of its answers (measured per-op
/// times, a test's fixed costs) derives from `adjusted_cost_model`, which keeps the rest.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <overlap/program/program.hpp>
#include <overlap/sim/cost/cost_model.hpp>
#include <overlap/sim/cost/profile_model.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace overlap::sim {

class analytic_cost_model final : public cost_model {
 public:
  /// Throws std::invalid_argument when the machine's profile has problems (`profile.hpp`) or its
  /// compute_speed is not a positive number.
  explicit analytic_cost_model(sim::machine m)
      : machine_(std::move(m)),
        sustained_peak_(machine_.peak_flops_per_us * machine_.clock_ratio() * machine_.compute_speed),
        tile_k_us_(2.0 * machine_.gemm_tile_m * machine_.gemm_tile_n /
                   (tensor_flops_per_us(machine_.gemm_efficiency) / machine_.sms)),
        memory_rate_(machine_.memory_bytes_per_us * machine_.memory_efficiency) {
    if (!(machine_.compute_speed > 0 && std::isfinite(machine_.compute_speed)))
      throw std::invalid_argument("machine " + machine_.name + ": compute_speed must be a positive number, got " +
                                  std::to_string(machine_.compute_speed));
    if (machine_.profile)
      profiled_.emplace(machine_.profile, memory_rate_, machine_.sustained_load, machine_.attention_backend);
  }
  const sim::machine& machine() const override { return machine_; }

  /// How a dense GEMM (`dense_gemm`) runs on `sms` SMs (`waves` 0: not in waves, or not a dense
  /// GEMM): each SM computes one output tile per wave, the last wave maybe partly idle. When the
  /// tiles alone leave SMs idle and k is long (a small m x n: the chunks of TP's ring exchange),
  /// the kernel splits k into `split` slices, one SM each, and reduces their fp32 partial tiles
  /// through memory (cuBLAS's split-K, cublasLt's CUBLASLT_ALGO_CONFIG_SPLITK_NUM; CUTLASS's
  /// split-K and stream-K): the split that takes least time, written and read back at the
  /// memory-bound kernels' bandwidth.
  struct gemm_waves {
    std::int64_t waves = 0;
    std::int64_t split = 1;
    double wave_us = 0;    ///< one wave: one tile, or one k slice of it
    double reduce_us = 0;  ///< the split's partial results through memory
  };
  gemm_waves waves_of(const schedule::op& o, int sms) const {
    const sim::machine& m = machine_;
    if (!dense_gemm(o) || m.gemm_tile_m <= 0 || m.gemm_tile_n <= 0) return {};
    sms = std::max(1, sms);
    const std::int64_t tiles = ceil_div(o.gemm.m, m.gemm_tile_m) * ceil_div(o.gemm.n, m.gemm_tile_n);
    const double per_k = tile_k_us_ / speedup(o);
    const double bandwidth = memory_rate_;
    const auto with = [&](std::int64_t split) {
      const std::int64_t slice = split > 1 ? ceil_div(o.gemm.k, split) : o.gemm.k;
      const double partials = split > 1 ? 2.0 * static_cast<double>(split) * static_cast<double>(o.gemm.m) *
                                              static_cast<double>(o.gemm.n) * 4
                                        : 0;
      return gemm_waves{ceil_div(tiles * split, sms), split, per_k * static_cast<double>(slice),
                        bandwidth > 0 ? partials / bandwidth : 0};
    };
    const auto total = [](const gemm_waves& g) { return static_cast<double>(g.waves) * g.wave_us + g.reduce_us; };
    // Unsplit: every tile of the whole k (what `with(1)` gives, without its branches). Most GEMMs
    // have a tile per SM or more, and end here.
    gemm_waves best{ceil_div(tiles, sms), 1, per_k * static_cast<double>(o.gemm.k), 0};
    const std::int64_t per_sm = sms / tiles;
    if (per_sm < 2) return best;
    // With one wave of slices (at most sms / tiles of them, each a whole k tile at least) the time
    // is about (k / split) per_k + split x the reduction's: least near sqrt of their ratio.
    const std::int64_t most = std::min<std::int64_t>(per_sm, m.gemm_tile_k > 0 ? o.gemm.k / m.gemm_tile_k : 1);
    if (most >= 2 && bandwidth > 0) {
      const double per_split = 8.0 * static_cast<double>(o.gemm.m) * static_cast<double>(o.gemm.n) / bandwidth;
      const double ideal = std::sqrt(per_k * static_cast<double>(o.gemm.k) / per_split);
      const auto low = std::clamp<std::int64_t>(static_cast<std::int64_t>(ideal), 2, most);
      for (const std::int64_t split : {low, std::min(low + 1, most)})
        if (const gemm_waves g = with(split); total(g) < total(best)) best = g;
    }
    return best;
  }

  /// Its compute time reads `compute_inputs` alone: the simulator may ask once per inputs.
  bool compute_reads_inputs_only() const override { return true; }

  /// A compute op running on `sms` of the GPU's SMs: with a profile, its measured time on the
  /// whole GPU, stretched on fewer SMs as the analytic time stretches.
  double compute_us(const schedule::op& o, int sms) const override {
    if (!profiled_) return analytic_us(o, sms);
    return stretched_us(o, sms, profiled_us(o));
  }
  /// This class's `compute_us(o, sms)` for an op whose time on the whole GPU, `whole_us`, it gave
  /// before: the simulator, which keeps that time per op, asks this instead of working out the
  /// profiled time again for every kernel that starts beside communication.
  double stretched_us(const schedule::op& o, int sms, double whole_us) const override {
    if (!profiled_) return analytic_us(o, sms);
    if (sms >= machine_.sms) return whole_us;
    const double analytic_whole = analytic_us(o, machine_.sms);
    return analytic_whole > 0 ? whole_us * (analytic_us(o, sms) / analytic_whole) : whole_us;
  }

  /// What an eager caller times for compute op `o` alone, with CUDA events around one call from
  /// the host, as the profile's tables were measured: the GPU time on the whole GPU, or the
  /// host's interval per call where that is longer (a GEMM or attention below the profile's floor,
  /// profile_model.hpp). The simulator runs `compute_us`; this is what a measurement of one op is
  /// held to. Without a profile, `compute_us`.
  double eager_us(const schedule::op& o) const {
    if (!profiled_ || !has_problem(o) || routed_experts(o.key.type)) return compute_us(o, machine_.sms);
    const profile_model& p = *profiled_;
    const double memory = memory_us(o);
    const auto g = static_cast<double>(o.gemm.groups), m = static_cast<double>(o.gemm.m),
               n = static_cast<double>(o.gemm.n), k = static_cast<double>(o.gemm.k);
    if (core_attention(o.key.type))
      return p.has_attention()
                 ? p.attention_measured_us(m, g, k, o.key.type == schedule::op_type::attn_core_bprop) + memory
                 : compute_us(o, machine_.sms);
    return o.gemm.groups == 1 ? p.gemm_measured_us(m, n, k) / speedup(o) + memory : compute_us(o, machine_.sms);
  }

  /// What the whole GPU computes per microsecond at `efficiency` of its tensor peak, at the
  /// sustained clock.
  double tensor_flops_per_us(double efficiency) const { return sustained_peak_ * efficiency; }

  /// One wave of a GEMM's tiles (0: the op does not run in waves): how long its blocks hold the
  /// SMs before another kernel can get them. With a profile, the analytic wave scaled as the
  /// profiled time is to the analytic one.
  double wave_us(const schedule::op& o, int sms) const override { return wave_us_at(o, sms, compute_us(o, sms)); }
  /// `wave_us` for an op that takes `us` on `sms` SMs (what a model adjusting this one gives):
  /// with a profile, the analytic wave scaled as `us` is to the analytic time.
  double wave_us_at(const schedule::op& o, int sms, double us) const {
    const gemm_waves g = waves_of(o, sms);
    if (!profiled_ || g.waves == 0) return g.wave_us;
    const double analytic = analytic_us(o, sms);
    return analytic > 0 ? g.wave_us * us / analytic : g.wave_us;
  }

  /// The profile's model, where the machine has a profile.
  const profile_model* profiled() const { return profiled_ ? &*profiled_ : nullptr; }

  static bool routed_experts(schedule::op_type t) {
    return t == schedule::op_type::experts_fprop || t == schedule::op_type::experts_dgrad ||
           t == schedule::op_type::experts_wgrad;
  }
  static bool core_attention(schedule::op_type t) {
    return t == schedule::op_type::attn_core_fprop || t == schedule::op_type::attn_core_bprop;
  }
  /// Whether the op's matrix problem is there (every size > 0 and in range: the simulator's
  /// structure check refuses one that is not; a caller that asks the model directly about such an
  /// op gets its flops' time).
  static bool has_problem(const schedule::op& o) { return o.gemm.m > 0 && o.gemm.valid(); }
  /// The two grouped products of a routed experts op (`routed_experts`): a gated MLP per local
  /// expert, fc1 (k -> 2n) and fc2 (n -> k) forward; transposed for the input gradient; for the
  /// weight gradient the products over the tokens (k the tokens per expert).
  static std::array<schedule::gemm_shape, 2> expert_products(const schedule::op& o) {
    const schedule::gemm_shape g = o.gemm;
    switch (o.key.type) {
      case schedule::op_type::experts_fprop: return {{{g.m, 2 * g.n, g.k, g.groups}, {g.m, g.k, g.n, g.groups}}};
      case schedule::op_type::experts_dgrad: return {{{g.m, g.n, g.k, g.groups}, {g.m, g.k, 2 * g.n, g.groups}}};
      default: return {{{2 * g.n, g.k, g.m, g.groups}, {g.k, g.n, g.m, g.groups}}};
    }
  }
  /// Whether the op is one dense GEMM: a problem of one group, not routed experts or attention.
  static bool dense_gemm(const schedule::op& o) {
    return has_problem(o) && o.gemm.groups == 1 && !routed_experts(o.key.type) && !core_attention(o.key.type);
  }

  /// A collective or p2p op after every member of its rendezvous has launched it.
  using cost_model::comm_us;
  double comm_us(const schedule::op& o, const placement& where) const override {
    const sim::machine& m = machine_;
    const bool crosses = where.crosses_nodes();
    const double alpha = crosses ? m.network_latency_us : m.nvlink_latency_us;
    const double bytes = static_cast<double>(o.bytes);
    const double p = where.ranks;
    if (o.kind != schedule::op_kind::collective) {
      const double link = o.sms == 0 ? m.copy_engine_bytes_per_us : m.p2p_bytes_per_us;
      return bytes / (crosses ? m.network_bytes_per_us : link > 0 ? link : m.nvlink_bytes_per_us) + alpha;
    }
    const double bw = crosses ? m.network_bytes_per_us : m.nvlink_bytes_per_us;
    switch (o.coll) {
      case schedule::collective::all_to_all: {
        // Each peer's part goes over the link to it: NVLink inside the node, the NIC across.
        const double part = bytes / p, off = where.off_node_peers, on = p - 1 - off;
        return std::max(on * part / m.nvlink_bytes_per_us, off * part / m.network_bytes_per_us) + alpha;
      }
      case schedule::collective::all_gather:
      case schedule::collective::reduce_scatter: return (p - 1) / p * bytes / bw + (p - 1) * alpha;
      case schedule::collective::all_reduce: return 2 * (p - 1) / p * bytes / bw + 2 * (p - 1) * alpha;
    }
    return 0;
  }
  /// The part of `comm_us` that is latency (per message or ring step), not bandwidth: a
  /// transfer's links are shared only by the rest (at most `comm_us`).
  double comm_latency_us(const schedule::op& o, const placement& where) const override {
    const sim::machine& m = machine_;
    const double alpha = where.crosses_nodes() ? m.network_latency_us : m.nvlink_latency_us;
    if (o.kind != schedule::op_kind::collective) return alpha;
    const double p = where.ranks;
    switch (o.coll) {
      case schedule::collective::all_to_all: return alpha;
      case schedule::collective::all_gather:
      case schedule::collective::reduce_scatter: return (p - 1) * alpha;
      case schedule::collective::all_reduce: return 2 * (p - 1) * alpha;
    }
    return 0;
  }
  /// How much faster than in the step's precision the op's products run in its format, the casts
  /// of their operands included (`machine::fp8_gemm_speedup`, `fp4_gemm_speedup`; 1 for native;
  /// the memory-bound kernels of its module keep their time). Throws
  /// std::invalid_argument for a format the machine has no tensor cores for.
  double speedup(const schedule::op& o) const {
    if (o.format == schedule::gemm_format::native) return 1;
    const double s = o.format == schedule::gemm_format::fp8 ? machine_.fp8_gemm_speedup : machine_.fp4_gemm_speedup;
    if (!(s > 0) || !std::isfinite(s))
      throw std::invalid_argument("cost_model: " + schedule::display_name(o.key) + " runs in " +
                                  std::string(schedule::to_string(o.format)) + ", which the machine " + machine_.name +
                                  " has no tensor cores (or no measured rate) for: simulate it on a machine that has "
                                  "(fp4: Blackwell), or without the " +
                                  std::string(schedule::to_string(o.format)) + " recipe");
    return s;
  }

 private:
  static std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
  /// The memory-bound kernels of the op's module, around it.
  double memory_us(const schedule::op& o) const { return static_cast<double>(o.memory_bytes) / memory_rate_; }

  /// The analytic time on `sms` SMs (no profile).
  double analytic_us(const schedule::op& o, int sms) const {
    const double memory = memory_us(o);
    // A GEMM in waves; the memory-bound kernels of its module (its norm, its activation) run
    // before or after it.
    if (const gemm_waves g = waves_of(o, sms); g.waves > 0)
      return static_cast<double>(g.waves) * g.wave_us + g.reduce_us + memory;
    return std::max(analytic_flops_us(o, sms), memory);
  }
  /// An op's flops on `sms` SMs at its kernel's achieved efficiency.
  double analytic_flops_us(const schedule::op& o, int sms) const {
    const sim::machine& m = machine_;
    double efficiency = m.gemm_efficiency;
    if (routed_experts(o.key.type)) efficiency = m.grouped_gemm_efficiency;
    if (o.key.type == schedule::op_type::attn_core_fprop) efficiency = m.attention_forward_efficiency;
    if (o.key.type == schedule::op_type::attn_core_bprop) efficiency = m.attention_backward_efficiency;
    const double share = static_cast<double>(sms) / m.sms;
    return o.flops / (tensor_flops_per_us(efficiency) * share * speedup(o));
  }

  /// The profiled time on the whole GPU (routed experts: their `expert_products`, each with the
  /// op's tokens per expert). An op whose kernel the profile has no table for (attention of
  /// another backend) keeps its analytic time. Below the profile's floor a kernel's GPU time is
  /// the analytic one (profile_model.hpp says why).
  double profiled_us(const schedule::op& o) const {
    const profile_model& p = *profiled_;
    const double memory = memory_us(o);
    if (!has_problem(o)) return o.flops > 0 ? std::max(p.flops_us(o.flops), memory) : memory;
    const auto g = static_cast<double>(o.gemm.groups), m = static_cast<double>(o.gemm.m),
               n = static_cast<double>(o.gemm.n), k = static_cast<double>(o.gemm.k);
    if (core_attention(o.key.type)) {
      if (!p.has_attention()) return analytic_us(o, machine_.sms);
      return p.attention_us(m, g, k, o.key.type == schedule::op_type::attn_core_bprop,
                            analytic_flops_us(o, machine_.sms)) +
             memory;
    }
    // Measured in the step's precision: a quantized GEMM's time over its format's speedup (the
    // fallback below the floor, analytic, in the same precision first).
    const double faster = speedup(o);
    if (routed_experts(o.key.type)) {
      double us = 0;
      for (const schedule::gemm_shape& x : expert_products(o))
        us += p.grouped_us(g, static_cast<double>(x.m), static_cast<double>(x.n), static_cast<double>(x.k), m);
      return us / faster + memory;
    }
    if (g > 1) return p.grouped_us(g, m, n, k, m) / faster + memory;
    const gemm_waves w = waves_of(o, machine_.sms);
    return p.gemm_us(m, n, k, static_cast<double>(w.waves) * w.wave_us * faster + w.reduce_us) / faster + memory;
  }

  sim::machine machine_;
  double sustained_peak_;  ///< the tensor peak at the sustained clock, times compute_speed
  // Asked for every GEMM, the same every time: worked out once.
  double tile_k_us_;    ///< one output tile's time per unit of k on one SM, at the GEMM efficiency
  double memory_rate_;  ///< the memory-bound kernels' bytes per microsecond
  std::optional<profile_model> profiled_;
};

/// A model that changes some of the analytic model's answers: derive from it, override what
/// differs, and call the base (or `analytic()`) for the rest. Its compute time may read anything
/// of an op (its key, for measured times), so the simulator asks it for every op.
class adjusted_cost_model : public cost_model {
 public:
  /// Throws std::invalid_argument as `analytic_cost_model` does.
  explicit adjusted_cost_model(sim::machine m) : analytic_(std::move(m)) {}

  const sim::machine& machine() const override { return analytic_.machine(); }
  double compute_us(const schedule::op& o, int sms) const override { return analytic_.compute_us(o, sms); }
  /// The analytic wave, scaled to this model's compute time.
  double wave_us(const schedule::op& o, int sms) const override {
    return analytic_.wave_us_at(o, sms, compute_us(o, sms));
  }
  using cost_model::comm_us;
  double comm_us(const schedule::op& o, const placement& where) const override { return analytic_.comm_us(o, where); }
  double comm_latency_us(const schedule::op& o, const placement& where) const override {
    return analytic_.comm_latency_us(o, where);
  }

  /// The analytic model this one adjusts.
  const analytic_cost_model& analytic() const { return analytic_; }

 private:
  analytic_cost_model analytic_;
};

}  // namespace overlap::sim
