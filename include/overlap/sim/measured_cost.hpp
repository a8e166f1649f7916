#pragma once
/// @file
/// A cost model with measured per-op times, read from JSON, for the ops a user has timed; every
/// other op keeps the analytic estimate. The document names ops as the generators do:
///
///     {"compute_us": {"fwd_l0_mb0": 812.5, "bwd_l0_mb0": 1640.0},
///      "comm_us":    {"grad_reduce_b0": 3120.0}}
///
/// A measured compute time is for the whole GPU; on fewer SMs it stretches as the analytic one
/// does. Needs nlohmann/json (Debian: nlohmann-json3-dev), which is why it is not in the umbrella.

#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include <overlap/sim/cost_model.hpp>

namespace overlap::sim {

class measured_cost_model : public cost_model {
 public:
  /// Throws std::invalid_argument naming the first entry that is not a non-negative number.
  measured_cost_model(sim::machine m, const nlohmann::json& doc) : cost_model(std::move(m)) {
    if (!doc.is_object()) throw std::invalid_argument("measured costs: the document must be a JSON object");
    for (const auto& [key, value] : doc.items()) {
      if (key != "compute_us" && key != "comm_us")
        throw std::invalid_argument("measured costs: unknown key \"" + key +
                                    "\" (expected \"compute_us\" and \"comm_us\")");
      if (!value.is_object())
        throw std::invalid_argument("measured costs: \"" + key + "\" must map op names to microseconds");
      auto& table = key == "compute_us" ? compute_ : comm_;
      for (const auto& [name, us] : value.items()) {
        if (!us.is_number() || us.get<double>() < 0)
          throw std::invalid_argument("measured costs: " + key + "[\"" + name +
                                      "\"] must be a non-negative number of microseconds");
        table[name] = us.get<double>();
      }
    }
  }

  /// Reads the document from a file; throws std::runtime_error when it cannot be read or parsed.
  static measured_cost_model from_file(sim::machine m, const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("measured costs: cannot open " + path);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error("measured costs: " + path + ": " + e.what());
    }
    return measured_cost_model(std::move(m), doc);
  }

  /// How many ops have a measured time.
  std::size_t measured() const { return compute_.size() + comm_.size(); }

  double compute_us(const schedule::op& o, int sms) const override {
    const auto it = compute_.find(o.name);
    if (it == compute_.end()) return cost_model::compute_us(o, sms);
    return it->second * machine().sms / sms;
  }

  double comm_us(const schedule::op& o, int ranks, bool crosses_nodes) const override {
    const auto it = comm_.find(o.name);
    return it == comm_.end() ? cost_model::comm_us(o, ranks, crosses_nodes) : it->second;
  }

 private:
  std::map<std::string, double> compute_, comm_;
};

}  // namespace overlap::sim
