#pragma once
/// @file
/// A machine profile: what one GPU was measured to do, as data the cost model reads
/// (`profile_model.hpp`) instead of datasheet peaks. Every time is a median of CUDA-event-timed
/// runs in microseconds on the whole GPU; every table is bf16. A profile comes from
/// `overlap-profile` on the GPU it describes, from a JSON file (`profile_json.hpp`), or built in
/// (`profiles/h200.hpp`). `problems(p)` lists what is wrong with one, each with its JSON path;
/// the cost model refuses a profile that has any.
///
/// What a section is for, and what the model does without it:
/// - `gemm` (required): dense GEMM times on a grid of (m, n, k), read in log space between grid
///   points and held at the grid's edge efficiency beyond it;
/// - `grouped_gemm`: measured grouped GEMMs (routed experts), which correct the model of a
///   grouped GEMM built from the dense table and the memory rate; without it, the model alone;
/// - `attention`: causal attention by (sequence, heads) per backend; without the machine's
///   backend, attention runs at the machine's analytic efficiencies;
/// - `memory_bytes_per_us`: what a device-to-device copy moves (read plus write), the rate of
///   memory-bound kernels;
/// - `sustained_flops_per_us`: a long run of large GEMMs at the power limit, the most any
///   tensor-core kernel does in a training step (0: not measured, no cap);
/// - `launch_us`, `event_record_us`: the host's cost per kernel launch and per event record (0:
///   not measured; the machine's figures stay);
/// - `concurrency`: the two-stream probe of a GEMM and a communication-like copy kernel, the
///   figures an SM model needs: how many of a communication kernel's CTAs share an SM when it
///   is placed during a GEMM, and what an SM moves with them (`machine::comm_sm_share`).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace overlap::sim {

/// Dense GEMMs y = x w^T (x: m x k, w: n x k, PyTorch's nn.Linear layout). `us` holds one time
/// per grid point, m-major: us[(i * n.size() + j) * k.size() + l] is (m[i], n[j], k[l]).
struct gemm_table {
  std::vector<std::int64_t> m, n, k;  ///< each strictly ascending, > 0
  std::vector<double> us;
  double at(std::size_t i, std::size_t j, std::size_t l) const { return us[(i * n.size() + j) * k.size() + l]; }
  friend bool operator==(const gemm_table&, const gemm_table&) = default;
};

/// One measured grouped GEMM: `groups` products of (m x k) and (k x n), each with its own weights
/// (routed experts, evenly routed: m tokens each).
struct grouped_gemm_entry {
  std::int64_t groups = 0, m = 0, n = 0, k = 0;
  double us = 0;
  friend bool operator==(const grouped_gemm_entry&, const grouped_gemm_entry&) = default;
};

/// Causal attention of one backend at one head size, batch 1: forward and backward times on a
/// grid of (seq, heads), seq-major: forward_us[i * heads.size() + j] is (seq[i], heads[j]).
struct attention_table {
  std::string backend;  ///< "cudnn", "flash", ...: what `machine::attention_backend` names
  std::int64_t head_dim = 128;
  std::vector<std::int64_t> seq, heads;  ///< each strictly ascending, > 0
  std::vector<double> forward_us, backward_us;
  friend bool operator==(const attention_table&, const attention_table&) = default;
};

/// Two streams: a large GEMM on one and a copy kernel of `copy_ctas` CTAs on the other, the
/// shape of an NCCL kernel of as many channels.
struct concurrency_probe {
  int copy_ctas = 0;
  int copy_ctas_per_sm = 0;  ///< the most of its CTAs seen on one SM when issued during the GEMM
  double gemm_alone_us = 0, copy_alone_us = 0;
  double side_by_side_us = 0;  ///< copy issued first, then the GEMM: both running together
  /// The copy's own time when issued during the GEMM on another hardware queue: its CTAs packed
  /// `copy_ctas_per_sm` to an SM on the first SMs the GEMM's tail frees (0: not measured).
  double copy_packed_us = 0;
  /// The copy's own time in the side-by-side run, one CTA to an SM beside the GEMM on the other
  /// SMs: slower than alone by the memory traffic they share (0: not measured).
  double copy_beside_gemm_us = 0;
  friend bool operator==(const concurrency_probe&, const concurrency_probe&) = default;
};

struct profile {
  std::string gpu;     ///< the device's name
  std::string source;  ///< where and how it was measured
  int sms = 0;
  double memory_bytes_per_us = 0;
  double sustained_flops_per_us = 0;
  double sustained_clock_mhz = 0;  ///< the SM clock during that run (0: not read)
  double launch_us = 0;
  double event_record_us = 0;
  gemm_table gemm;
  std::vector<grouped_gemm_entry> grouped_gemm;
  std::vector<attention_table> attention;
  concurrency_probe concurrency;  ///< copy_ctas 0: not measured

  const attention_table* attention_of(const std::string& backend) const {
    const auto it = std::find_if(attention.begin(), attention.end(),
                                 [&](const attention_table& t) { return t.backend == backend; });
    return it == attention.end() ? nullptr : &*it;
  }
  friend bool operator==(const profile&, const profile&) = default;
};

/// What a profile may hold: a kernel of at most 1,000 s, sizes that fit an int, rates below
/// 10^15 per microsecond. Beyond them a value is a typo or a broken measurement, and the model's
/// logarithms and products stay far from overflow inside them.
inline constexpr double profile_most_us = 1e9;
inline constexpr std::int64_t profile_most_size = std::int64_t{1} << 31;
inline constexpr double profile_most_rate = 1e15;

namespace detail {

inline bool positive_time(double us) { return std::isfinite(us) && us > 0 && us <= profile_most_us; }

inline void check_axis(const std::vector<std::int64_t>& axis, const std::string& path, std::vector<std::string>& out) {
  if (axis.empty()) out.push_back(path + ": empty; give the sizes measured, ascending");
  for (std::size_t i = 0; i < axis.size(); ++i) {
    if (axis[i] <= 0 || axis[i] > profile_most_size)
      out.push_back(path + "[" + std::to_string(i) + "]: " + std::to_string(axis[i]) + " is not in 1..2^31");
    else if (i > 0 && axis[i] <= axis[i - 1])
      out.push_back(path + "[" + std::to_string(i) + "]: " + std::to_string(axis[i]) + " does not ascend from " +
                    std::to_string(axis[i - 1]));
  }
}

inline void check_times(const std::vector<double>& us, std::size_t want, const std::string& path,
                        std::vector<std::string>& out) {
  if (us.size() != want) {
    out.push_back(path + ": " + std::to_string(us.size()) + " times for a grid of " + std::to_string(want) +
                  " points; give one per point");
    return;
  }
  for (std::size_t i = 0; i < us.size(); ++i)
    if (!positive_time(us[i])) out.push_back(path + "[" + std::to_string(i) + "]: not a time in (0, 1e9] us");
}

inline void check_rate(double v, const std::string& path, bool required, std::vector<std::string>& out) {
  if (!std::isfinite(v) || v < 0 || v >= profile_most_rate || (required && v == 0))
    out.push_back(path + ": " + std::to_string(v) +
                  (required ? " is not in (0, 1e15)" : " is not in [0, 1e15) (0: not measured)"));
}

/// One std::invalid_argument: "<source>: N problems:" and a line each.
[[noreturn]] inline void throw_problems(const std::string& source, const std::vector<std::string>& problems) {
  std::string message =
      source + ": " + std::to_string(problems.size()) + (problems.size() == 1 ? " problem:" : " problems:");
  for (const std::string& p : problems) (message += "\n  ") += p;
  throw std::invalid_argument(message);
}

}  // namespace detail

/// What is wrong with `p`, one line each, led by the JSON path of the value (empty: nothing).
inline std::vector<std::string> problems(const profile& p) {
  std::vector<std::string> out;
  if (p.sms < 1 || p.sms > 1'000'000) out.push_back("sms: " + std::to_string(p.sms) + " is not in 1..10^6");
  detail::check_rate(p.memory_bytes_per_us, "memory_bytes_per_us", true, out);
  detail::check_rate(p.sustained_flops_per_us, "sustained_flops_per_us", false, out);
  detail::check_rate(p.sustained_clock_mhz, "sustained_clock_mhz", false, out);
  detail::check_rate(p.launch_us, "launch_us", false, out);
  detail::check_rate(p.event_record_us, "event_record_us", false, out);
  detail::check_axis(p.gemm.m, "gemm.m", out);
  detail::check_axis(p.gemm.n, "gemm.n", out);
  detail::check_axis(p.gemm.k, "gemm.k", out);
  detail::check_times(p.gemm.us, p.gemm.m.size() * p.gemm.n.size() * p.gemm.k.size(), "gemm.us", out);
  for (std::size_t i = 0; i < p.grouped_gemm.size(); ++i) {
    const grouped_gemm_entry& g = p.grouped_gemm[i];
    const std::string path = "grouped_gemm[" + std::to_string(i) + "]";
    for (const std::int64_t v : {g.groups, g.m, g.n, g.k})
      if (v <= 0 || v > profile_most_size) {
        out.push_back(path + ": groups, m, n and k must be in 1..2^31");
        break;
      }
    if (!detail::positive_time(g.us)) out.push_back(path + ".us: not a time in (0, 1e9] us");
  }
  for (std::size_t i = 0; i < p.attention.size(); ++i) {
    const attention_table& a = p.attention[i];
    const std::string path = "attention[" + std::to_string(i) + "]";
    if (a.backend.empty()) out.push_back(path + ".backend: empty; name the backend (\"cudnn\", \"flash\")");
    if (p.attention_of(a.backend) != &a) out.push_back(path + ".backend: \"" + a.backend + "\" is given twice");
    if (a.head_dim <= 0 || a.head_dim > profile_most_size)
      out.push_back(path + ".head_dim: " + std::to_string(a.head_dim) + " is not in 1..2^31");
    detail::check_axis(a.seq, path + ".seq", out);
    detail::check_axis(a.heads, path + ".heads", out);
    detail::check_times(a.forward_us, a.seq.size() * a.heads.size(), path + ".forward_us", out);
    detail::check_times(a.backward_us, a.seq.size() * a.heads.size(), path + ".backward_us", out);
  }
  const concurrency_probe& c = p.concurrency;
  if (c.copy_ctas < 0 || c.copy_ctas_per_sm < 0)
    out.push_back("concurrency: copy_ctas and copy_ctas_per_sm must be >= 0");
  if (c.copy_ctas > 0)
    for (const double us : {c.gemm_alone_us, c.copy_alone_us, c.side_by_side_us})
      if (!detail::positive_time(us)) {
        out.push_back("concurrency: gemm_alone_us, copy_alone_us and side_by_side_us must be times in (0, 1e9] us");
        break;
      }
  for (const auto& [name, us] :
       {std::pair{"copy_packed_us", c.copy_packed_us}, {"copy_beside_gemm_us", c.copy_beside_gemm_us}})
    if (us != 0 && !detail::positive_time(us))
      out.push_back(std::string("concurrency.") + name + ": must be a time in (0, 1e9] us, or 0 for not measured");
  if (c.copy_ctas > 0 && c.copy_ctas >= p.sms)
    out.push_back("concurrency.copy_ctas: " + std::to_string(c.copy_ctas) + " leaves no SM of the " +
                  std::to_string(p.sms) + " for the GEMM beside it");
  return out;
}

}  // namespace overlap::sim
