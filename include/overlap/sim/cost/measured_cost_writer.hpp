#pragma once
/// @file
/// Writes the document `measured_cost_model` reads, from one rank's program and one measured time
/// per op (in program order; `cuda::step_timing::us_per_op()` gives them from the executor's
/// timing mode, and this header needs no CUDA):
///
///     {"compute_us": {"fc1_fprop l0 mb0": 812.5, ...}, "comm_us": {"dp_grad_reduce c0 b0": 3120, ...}}
///
/// Compute ops go under "compute_us", collectives, sends and receives under "comm_us"; records,
/// waits and host syncs take no time of their own and are left out. An entry is keyed either by
/// the op's display name, which the reader matches to that op, or by its op type, which matches
/// every op of the type. Times are taken as measured: a compute time is read as the whole GPU's,
/// so time compute ops without concurrent communication kernels for costs that stretch right on
/// fewer SMs. Needs nlohmann/json, like the reader.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include <overlap/program/program.hpp>
#include <overlap/program/semantics.hpp>
#include <overlap/sim/cost/measured_cost.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace overlap::sim {

/// What one entry of a written document times.
enum class measured_entries : std::uint8_t {
  /// One entry per display name: each op's own time. Ops with equal keys (one bucket's gradient
  /// reduced twice) share one entry, the mean of their times.
  per_op,
  /// One entry per op type, the mean over its ops: one time for every fc1_fprop, whatever its
  /// layer or micro-batch.
  per_type,
};

/// The measured-cost document for `p` with `us[i]` microseconds for `p.ops[i]`. Throws one
/// std::invalid_argument naming the first bad value: not one time per op, a time (of any op,
/// timed or not) that is not finite or is negative, a program the structure check refuses
/// (program/semantics.hpp: an op type or slot that does not exist, a coordinate below -1: its
/// keys would be written as names the reader refuses, or reads as another op's), or entries the
/// reader would refuse as ties.
inline nlohmann::json measured_cost_document(const schedule::program& p, std::span<const double> us,
                                             measured_entries entries = measured_entries::per_op) {
  const std::string source = "measured_cost_document: rank " + std::to_string(p.rank);
  if (us.size() != p.ops.size())
    throw std::invalid_argument(source + ": " + std::to_string(us.size()) + " times for a program of " +
                                std::to_string(p.ops.size()) + " ops; give one time per op, in program order");
  if (const auto problems = schedule::structure_problems(p); !problems.empty()) {
    const schedule::structure_problem& first = problems.front();
    throw std::invalid_argument(source + (first.op >= 0 ? ", op " + std::to_string(first.op) : std::string()) + ": " +
                                first.text + "; the program is not one the measured-cost reader can match (" +
                                std::to_string(problems.size()) + " problem(s) in all)");
  }
  struct mean {
    double sum = 0;
    int count = 0;
  };
  std::map<std::string, mean> compute, comm;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const schedule::op& o = p.ops[i];
    if (!std::isfinite(us[i]) || us[i] < 0) {
      std::ostringstream value;
      value << us[i];
      throw std::invalid_argument(source + ", op " + std::to_string(i) + " '" + schedule::display_name(o) +
                                  "': " + value.str() + " us is " + (std::isfinite(us[i]) ? "negative" : "not finite") +
                                  "; give finite microseconds >= 0");
    }
    const bool is_compute = o.kind == schedule::op_kind::compute;
    if (!is_compute && !schedule::is_communication(o.kind)) continue;
    // The key's display name, not the op's: an untyped op is then "none ...", which the reader
    // matches to untyped ops.
    const std::string key = entries == measured_entries::per_op ? schedule::display_name(o.key)
                                                                : std::string(schedule::to_string(o.key.type));
    mean& m = (is_compute ? compute : comm)[key];
    m.sum += us[i];
    ++m.count;
  }
  nlohmann::json doc = {{"compute_us", nlohmann::json::object()}, {"comm_us", nlohmann::json::object()}};
  for (const auto& [key, m] : compute) doc["compute_us"][key] = m.sum / m.count;
  for (const auto& [key, m] : comm) doc["comm_us"][key] = m.sum / m.count;
  // A display name leaves out the coordinates that do not apply, and as a pattern it then matches
  // any value there: ops of one type keyed with different coordinates ("fc1_fprop l3" and
  // "fc1_fprop mb0") can write entries the reader refuses as ties. Nothing is written that the
  // reader would refuse.
  try {
    (void)measured_cost_model(h100_node(), doc);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(source +
                                ": its ops' display names do not tell them apart as patterns (keys of one "
                                "type that leave out different coordinates); write per op type, or key "
                                "the ops alike. The reader says: " +
                                std::string(e.what()));
  }
  return doc;
}

/// Writes `measured_cost_document(p, us, entries)` to `path`, indented. Throws as it does, and
/// std::runtime_error when the file cannot be written.
inline void write_measured_costs(const std::string& path, const schedule::program& p, std::span<const double> us,
                                 measured_entries entries = measured_entries::per_op) {
  const std::string text = measured_cost_document(p, us, entries).dump(2) + "\n";
  std::ofstream out(path);
  if (!out || !(out << text) || !out.flush()) throw std::runtime_error("write_measured_costs: cannot write " + path);
}

}  // namespace overlap::sim
