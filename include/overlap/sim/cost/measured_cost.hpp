#pragma once
/// @file
/// A cost model with measured per-op times, read from JSON, for the ops a user has timed; every
/// other op keeps the analytic estimate. Entries are key patterns (program/op_key.hpp), so one
/// entry can time every op of a type and a more specific one can override it where it differs:
///
///     {"compute_us": {"fc1_fprop": 812.5, "fc1_fprop l3": 900, "* l0": 150},
///      "comm_us":    {"dp_grad_reduce": 3120, "tp_all_gather qkv_fprop mb*": 41}}
///
/// An op takes the time of the most specific pattern that matches its key (`specificity()`: the
/// number of parts the pattern fixes). JSON objects carry no reliable order (nlohmann::json sorts
/// keys), so ties cannot be broken by position: two entries of equal specificity that could match
/// one op are rejected at load, unless a more specific entry covers every op they share (above,
/// "* l0" and "fc1_fprop" would both match "fc1_fprop l0" at specificity 1: add "fc1_fprop l0").
/// The display name of an op (`display_name`) is a pattern that matches it, so a table written
/// from display names times each op by its own entry; `measured_cost_writer.hpp` writes one from
/// the executor's timing mode (`cuda::basic_executor::run_timed`).
///
/// A measured compute time is for the whole GPU; on fewer SMs it stretches as the analytic one
/// does. A measured communication time is taken as is, whatever the group size or placement.
/// Compute types belong under "compute_us", communication types under "comm_us"; "*" types match
/// only the ops of their own section, and `none` matches the untyped ops of hand-written programs.
///
/// A pattern written twice keeps its last time (a JSON object holds one value per key); the
/// same pattern spelled two ways ("fc1_fprop l3", "fc1_fprop l3 mb*") is a tie.
///
/// Every bad entry is reported at once, with its JSON path, in one std::invalid_argument. Needs
/// nlohmann/json (Debian: nlohmann-json3-dev), which is why it is not in the umbrella.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <overlap/program/op_key.hpp>
#include <overlap/sim/cost/analytic.hpp>

namespace overlap::sim {

namespace detail {

/// The keys both match (for overlapping patterns).
inline schedule::key_pattern intersection(const schedule::key_pattern& a, const schedule::key_pattern& b) {
  schedule::key_pattern p = a;
  for (std::size_t i = 0; i < p.at.size(); ++i)
    if (!p.at[i]) p.at[i] = b.at[i];
  if (!p.type) p.type = b.type;
  if (!p.slot) p.slot = b.slot;
  if (!p.expert) p.expert = b.expert;
  if (!p.recompute) p.recompute = b.recompute;
  return p;
}

/// The pattern as `parse_key_pattern` reads it back.
inline std::string pattern_text(const schedule::key_pattern& p) {
  std::string text = p.type ? std::string(schedule::to_string(*p.type)) : "*";
  if (p.slot) (text += ' ') += schedule::to_string(*p.slot);
  for (std::size_t i = 0; i < p.at.size(); ++i)
    if (p.at[i]) ((text += ' ') += schedule::detail::key_fields[i].prefix) += std::to_string(*p.at[i]);
  if (p.expert) text += " expert";
  if (p.recompute) text += " recompute";
  return text;
}

/// `"fc1_fprop l3"`; the replacement character stands in for invalid UTF-8, which a document
/// built in code (not parsed) may hold.
inline std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// `compute_us["fc1_fprop l3"]`.
inline std::string entry_path(const std::string& section, const std::string& pattern) {
  return section + "[" + quoted(pattern) + "]";
}

/// "an array", "a string", "null", ...
inline std::string a_value(const nlohmann::json& v) {
  const std::string type = v.type_name();
  if (v.is_null()) return type;
  return (type.front() == 'a' || type.front() == 'o' ? "an " : "a ") + type;
}

/// What is wrong with an entry's op types for its section, if anything.
inline std::optional<std::string> type_problem(const schedule::key_pattern& p, bool comm_section) {
  using schedule::op_kind;
  if (p.slot && *p.slot != schedule::op_type::none && schedule::kind_of(*p.slot) != op_kind::compute)
    return "the slot " + std::string(schedule::to_string(*p.slot)) +
           " is not a compute op type; a slot names the GEMM a TP op serves";
  if (!p.type || *p.type == schedule::op_type::none) return std::nullopt;
  const std::string name(schedule::to_string(*p.type));
  const op_kind kind = schedule::kind_of(*p.type);
  if (kind != op_kind::compute && !schedule::is_communication(kind))
    return name + " ops take no time of their own; remove the entry";
  if (comm_section && kind == op_kind::compute) return name + " is a compute op type; move the entry to compute_us";
  if (!comm_section && kind != op_kind::compute) return name + " is a communication op type; move the entry to comm_us";
  return std::nullopt;
}

struct measured_entry {
  schedule::key_pattern pattern;
  double us = 0;
  std::string path;  ///< for messages
};

/// A pattern's parts as numbers, in a fixed order (type, slot, the coordinates, expert,
/// recompute), and which of them it fixes.
struct pattern_parts {
  std::array<std::int64_t, 9> value{};
  unsigned mask = 0;
  explicit pattern_parts(const schedule::key_pattern& p) {
    const auto put = [&](std::size_t i, const auto& part) {
      if (part) value[i] = static_cast<std::int64_t>(*part), mask |= 1u << i;
    };
    put(0, p.type);
    put(1, p.slot);
    for (std::size_t i = 0; i < p.at.size(); ++i) put(2 + i, p.at[i]);
    put(7, p.expert);
    put(8, p.recompute);
  }
  /// The values of the parts in `of` (a subset of `mask`), the others 0: equal for two patterns
  /// exactly when they agree on `of`.
  std::array<std::int64_t, 9> projection(unsigned of) const {
    std::array<std::int64_t, 9> out{};
    for (std::size_t i = 0; i < out.size(); ++i)
      if (of & (1u << i)) out[i] = value[i];
    return out;
  }
};

struct projection_hash {
  std::size_t operator()(const std::array<std::int64_t, 9>& v) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    for (const std::int64_t x : v) h = (h ^ static_cast<std::uint64_t>(x)) * 0x100000001b3ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

/// Appends to `problems` each pair of entries that would tie on some op: equally specific,
/// overlapping, and no more specific entry covering every op they share.
///
/// Patterns that fix the same parts overlap only when they are the same; patterns that fix
/// different parts overlap when they agree on the parts both fix. So entries are grouped by the
/// parts they fix, each group's patterns hashed on the parts it shares with another group of the
/// same specificity, and a pair's shared keys looked up among the more specific groups whose parts
/// it fixes: time linear in the entries for a per-op file (every entry a display name) and in the
/// ties found, where the pairwise check took minutes for 40,000 entries.
inline void add_ties(const std::vector<measured_entry>& entries, std::vector<std::string>& problems) {
  using projection_set = std::unordered_set<std::array<std::int64_t, 9>, projection_hash>;
  std::vector<pattern_parts> parts;
  parts.reserve(entries.size());
  std::map<unsigned, std::vector<std::size_t>> by_mask;  // the entries fixing each set of parts
  for (std::size_t i = 0; i < entries.size(); ++i) {
    parts.emplace_back(entries[i].pattern);
    by_mask[parts.back().mask].push_back(i);
  }
  std::map<unsigned, projection_set> fixed;  // each group's patterns, for the covering lookup
  for (const auto& [mask, members] : by_mask)
    for (const std::size_t i : members) fixed[mask].insert(parts[i].projection(mask));
  const auto covered = [&](const std::array<std::int64_t, 9>& shared, unsigned shared_mask, int specificity) {
    for (const auto& [mask, set] : fixed) {
      if (std::popcount(mask) <= specificity || (mask & ~shared_mask) != 0) continue;
      std::array<std::int64_t, 9> key{};
      for (std::size_t b = 0; b < key.size(); ++b)
        if (mask & (1u << b)) key[b] = shared[b];
      if (set.count(key) != 0) return true;
    }
    return false;
  };
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, std::string>> found;
  for (auto m1 = by_mask.begin(); m1 != by_mask.end(); ++m1)
    for (auto m2 = m1; m2 != by_mask.end(); ++m2) {
      if (std::popcount(m1->first) != std::popcount(m2->first)) continue;
      const unsigned both = m1->first & m2->first;
      std::unordered_map<std::array<std::int64_t, 9>, std::vector<std::size_t>, projection_hash> first_side;
      for (const std::size_t i : m1->second) first_side[parts[i].projection(both)].push_back(i);
      for (const std::size_t j : m2->second) {
        const auto it = first_side.find(parts[j].projection(both));
        if (it == first_side.end()) continue;
        for (const std::size_t i : it->second) {
          if (m1 == m2 && i >= j) continue;  // each pair once
          const std::size_t a = std::min(i, j), b = std::max(i, j);
          if (m1 == m2) {  // the same parts, the same values
            found.push_back({{a, b}, entries[a].path + " and " + entries[b].path + ": the same pattern; keep one"});
            continue;
          }
          std::array<std::int64_t, 9> shared = parts[i].value;
          for (std::size_t k = 0; k < shared.size(); ++k)
            if (m2->first & (1u << k)) shared[k] = parts[j].value[k];
          if (covered(shared, m1->first | m2->first, std::popcount(m1->first))) continue;
          const std::string text = pattern_text(intersection(entries[a].pattern, entries[b].pattern));
          found.push_back({{a, b},
                           entries[a].path + " and " + entries[b].path + ": both match " + quoted(text) +
                               " equally specifically; add an entry for " + quoted(text)});
        }
      }
    }
  std::sort(found.begin(), found.end());  // in the entries' order, as a pairwise pass finds them
  for (auto& [pair, text] : found) problems.push_back(std::move(text));
}

/// One section's entries, grouped by the op type they can match and most specific first, so
/// that a lookup takes the first match (ties were rejected, so it is the only best one).
class measured_table {
 public:
  measured_table() = default;
  explicit measured_table(const std::vector<measured_entry>& entries) : size_(entries.size()) {
    for (std::size_t t = 0; t < schedule::op_type_count; ++t) {
      auto& bucket = by_type_[t];
      for (const auto& e : entries)
        if (!e.pattern.type || static_cast<std::size_t>(*e.pattern.type) == t) bucket.push_back({e.pattern, e.us});
      std::stable_sort(bucket.begin(), bucket.end(), [](const timed& a, const timed& b) {
        return a.pattern.specificity() > b.pattern.specificity();
      });
    }
  }

  std::optional<double> find(const schedule::op_key& k) const {
    if (!schedule::is_valid(k.type)) return std::nullopt;
    for (const auto& e : by_type_[static_cast<std::size_t>(k.type)])
      if (e.pattern.matches(k)) return e.us;
    return std::nullopt;
  }

  std::size_t size() const { return size_; }

 private:
  struct timed {
    schedule::key_pattern pattern;
    double us;
  };
  std::size_t size_ = 0;
  std::array<std::vector<timed>, schedule::op_type_count> by_type_{};
};

}  // namespace detail

class measured_cost_model : public adjusted_cost_model {
 public:
  /// Throws std::invalid_argument listing every bad entry: a section that is not an object, an
  /// unknown top-level key, a pattern that does not parse, an op type in the wrong section, a
  /// time that is not a finite non-negative number, and equally specific entries that tie.
  measured_cost_model(sim::machine m, const nlohmann::json& doc)
      : measured_cost_model(std::move(m), doc, "measured costs") {}

  /// Reads the document from a file. Throws std::runtime_error when it cannot be read or is not
  /// JSON, and std::invalid_argument for bad entries as the constructor does; a number beyond
  /// the range of a double stops the read, so it is the only entry reported.
  static measured_cost_model from_file(sim::machine m, const std::string& path) {
    const std::string source = "measured costs in " + path;
    std::ifstream in(path);
    if (!in) throw std::runtime_error(source + ": cannot open the file");
    // The keys down to the value being read: nlohmann reports an overflowing number without
    // saying where it is.
    std::vector<std::string> keys;
    const auto track = [&keys](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      if (event == nlohmann::json::parse_event_t::key) {
        keys.resize(static_cast<std::size_t>(depth - 1));
        keys.push_back(parsed.get<std::string>());
      }
      return true;
    };
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(in, track);
    } catch (const nlohmann::json::out_of_range&) {
      std::string where = keys.empty() ? "the document" : keys.front();
      if (keys.size() > 1) where = detail::entry_path(where, keys[1]);
      throw std::invalid_argument(source + ": 1 problem:\n  " + where +
                                  ": a number too large for a double; give finite microseconds");
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(source + ": not JSON: " + e.what());
    }
    return measured_cost_model(std::move(m), doc, source);
  }

  /// How many entries the document has.
  std::size_t measured() const { return compute_.size() + comm_.size(); }

  double compute_us(const schedule::op& o, int sms) const override {
    const auto us = compute_.find(o.key);
    return us ? *us * machine().sms / sms : adjusted_cost_model::compute_us(o, sms);
  }

  using cost_model::comm_us;
  double comm_us(const schedule::op& o, const placement& where) const override {
    const auto us = comm_.find(o.key);
    return us ? *us : adjusted_cost_model::comm_us(o, where);
  }
  /// A measured time has no latency part known apart: all of it shares the links.
  double comm_latency_us(const schedule::op& o, const placement& where) const override {
    return comm_.find(o.key) ? 0 : adjusted_cost_model::comm_latency_us(o, where);
  }

 private:
  measured_cost_model(sim::machine m, const nlohmann::json& doc, const std::string& source)
      : adjusted_cost_model(std::move(m)) {
    if (!doc.is_object())
      throw std::invalid_argument(source + ": the document is " + detail::a_value(doc) +
                                  ", not an object; write {\"compute_us\": {...}, \"comm_us\": {...}}");
    std::vector<std::string> problems;
    std::vector<detail::measured_entry> compute, comm;
    for (const auto& [section, entries] : doc.items()) {
      if (section != "compute_us" && section != "comm_us") {
        problems.push_back(detail::quoted(section) + ": unknown key; the sections are \"compute_us\" and \"comm_us\"");
        continue;
      }
      if (!entries.is_object()) {
        problems.push_back(section + ": " + detail::a_value(entries) +
                           ", not an object; map key patterns to microseconds");
        continue;
      }
      const bool comm_section = section == "comm_us";
      auto& table = comm_section ? comm : compute;
      for (const auto& [text, us] : entries.items()) {
        const std::string path = detail::entry_path(section, text);
        const std::size_t before = problems.size();
        std::string why;
        const auto pattern = schedule::parse_key_pattern(text, why);
        // parse_key_pattern quotes the pattern first; the path already names it.
        const std::string quoted = "\"" + text + "\": ";
        if (!pattern)
          problems.push_back(path + ": " + (why.starts_with(quoted) ? why.substr(quoted.size()) : why));
        else if (const auto problem = detail::type_problem(*pattern, comm_section))
          problems.push_back(path + ": " + *problem);
        if (!us.is_number())
          problems.push_back(path + ": " + detail::a_value(us) + ", not a number; give microseconds");
        else if (!std::isfinite(us.get<double>()))
          problems.push_back(path + ": not finite; give finite microseconds");
        else if (us.get<double>() < 0)
          problems.push_back(path + ": " + us.dump() + " is negative; give microseconds >= 0");
        if (problems.size() == before) table.push_back({*pattern, us.get<double>(), path});
      }
    }
    detail::add_ties(compute, problems);
    detail::add_ties(comm, problems);
    if (!problems.empty()) {
      std::string message =
          source + ": " + std::to_string(problems.size()) + (problems.size() == 1 ? " problem:" : " problems:");
      for (const auto& p : problems) (message += "\n  ") += p;
      throw std::invalid_argument(message);
    }
    compute_ = detail::measured_table(compute);
    comm_ = detail::measured_table(comm);
  }

  detail::measured_table compute_, comm_;
};

}  // namespace overlap::sim
