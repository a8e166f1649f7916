#pragma once
/// @file
/// Machine profiles (`profile.hpp`) as JSON files: what `overlap-profile` writes and
/// `overlap-plan --profile` reads. Every field has the name of the struct's:
///
///     {"schema": "overlap.profile", "version": 1, "gpu": "NVIDIA H200", "source": "...",
///      "sms": 132, "memory_bytes_per_us": 4271474.2, "sustained_flops_per_us": 681700000,
///      "sustained_clock_mhz": 1500, "launch_us": 0, "event_record_us": 0,
///      "gemm": {"m": [256, ...], "n": [512, ...], "k": [512, ...], "us": [38.75, ...]},
///      "grouped_gemm": [{"groups": 256, "m": 128, "n": 4096, "k": 7168, "us": 4279.1}, ...],
///      "attention": [{"backend": "cudnn", "head_dim": 128, "seq": [...], "heads": [...],
///                     "forward_us": [...], "backward_us": [...]}],
///      "concurrency": {"copy_ctas": 16, "copy_ctas_per_sm": 4, "gemm_alone_us": 1427.6,
///                      "copy_alone_us": 1082, "side_by_side_us": 1628.3, "copy_packed_us": 2914.2,
///                      "copy_beside_gemm_us": 1265.1}}
///
/// "grouped_gemm", "attention", "concurrency" and the zero-means-unmeasured numbers may be left
/// out. Every problem is reported at once, each with its JSON path, in one
/// std::invalid_argument: a missing or unknown key, a value of the wrong type, and what
/// `problems(profile)` finds. Needs nlohmann/json (Debian: nlohmann-json3-dev).

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <overlap/sim/machine/profile.hpp>

namespace overlap::sim {

inline constexpr const char* profile_schema = "overlap.profile";
inline constexpr int profile_version = 1;

namespace detail {

/// Reads one object's fields, each at most once, and lists what is wrong with their paths.
class json_fields {
 public:
  json_fields(const nlohmann::json& object, std::string path, std::vector<std::string>& problems)
      : object_(object), path_(std::move(path)), problems_(problems) {
    // `absent` (a missing section, reported where it was read) is null.
    if (!object_.is_object() && &object_ != &absent()) problem(path_.empty() ? "the document" : path_, "not an object");
  }
  /// Reports keys no field read; call after reading every field.
  ~json_fields() {
    if (!object_.is_object()) return;
    for (const auto& [key, value] : object_.items())
      if (std::find(read_.begin(), read_.end(), key) == read_.end()) problem(at(key), "unknown key");
  }
  json_fields(const json_fields&) = delete;
  json_fields& operator=(const json_fields&) = delete;

  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  /// What a missing section is read as (its absence reported where it was looked up).
  static const nlohmann::json& absent() {
    static const nlohmann::json none;
    return none;
  }
  /// The value of `key`, or nullptr when it is absent (reported when `required`).
  const nlohmann::json* value(const std::string& key, bool required) {
    read_.push_back(key);
    if (!object_.is_object() || !object_.contains(key)) {
      if (required && object_.is_object()) problem(at(key), "missing");
      return nullptr;
    }
    return &object_.at(key);
  }
  void number(const std::string& key, double& out, bool required = true) {
    const nlohmann::json* v = value(key, required);
    if (v == nullptr) return;
    if (!v->is_number()) return problem(at(key), "not a number");
    out = v->get<double>();
  }
  template <class Int>
  void integer(const std::string& key, Int& out, bool required = true) {
    if (const nlohmann::json* v = value(key, required)) read_integer(*v, at(key), out);
  }
  void text(const std::string& key, std::string& out, bool required = true) {
    const nlohmann::json* v = value(key, required);
    if (v == nullptr) return;
    if (!v->is_string()) return problem(at(key), "not a string");
    out = v->get<std::string>();
  }
  template <class T>
  void list(const std::string& key, std::vector<T>& out) {
    const nlohmann::json* v = value(key, true);
    if (v == nullptr) return;
    if (!v->is_array()) return problem(at(key), "not an array");
    out.clear();
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string where = at(key) + "[" + std::to_string(i) + "]";
      T item{};
      if constexpr (std::is_integral_v<T>) {
        if (!read_integer((*v)[i], where, item)) continue;
      } else {
        if (!(*v)[i].is_number()) {
          problem(where, "not a number");
          continue;
        }
        item = (*v)[i].template get<T>();
      }
      out.push_back(item);
    }
  }

 private:
  template <class Int>
  bool read_integer(const nlohmann::json& v, const std::string& where, Int& out) {
    if (!v.is_number_integer()) {
      problem(where, "not a whole number");
      return false;
    }
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<Int>::max())
                               : v.get<std::int64_t>() < std::numeric_limits<Int>::min() ||
                                     v.get<std::int64_t>() > std::numeric_limits<Int>::max()) {
      problem(where, "out of range");
      return false;
    }
    out = static_cast<Int>(v.is_number_unsigned() ? static_cast<std::int64_t>(v.get<std::uint64_t>())
                                                  : v.get<std::int64_t>());
    return true;
  }
  void problem(const std::string& where, const std::string& what) { problems_.push_back(where + ": " + what); }

  const nlohmann::json& object_;
  std::string path_;
  std::vector<std::string>& problems_;
  std::vector<std::string> read_;
};

}  // namespace detail

/// The profile a JSON document holds. Throws std::invalid_argument listing every problem, each
/// led by `source` once.
inline profile profile_from_json(const nlohmann::json& doc, const std::string& source = "machine profile") {
  if (!doc.is_object())
    detail::throw_problems(source, {std::string("the document is ") + doc.type_name() + ", not an object"});
  profile p;
  std::vector<std::string> problems;
  {
    detail::json_fields top(doc, "", problems);
    std::string schema;
    int version = 0;
    top.text("schema", schema);
    top.integer("version", version);
    if (doc.is_object() && doc.contains("schema") && doc["schema"].is_string() && schema != profile_schema)
      problems.push_back("schema: \"" + schema + "\" is not \"" + profile_schema + "\"");
    if (doc.is_object() && doc.contains("version") && doc["version"].is_number_integer() && version != profile_version)
      problems.push_back("version: " + std::to_string(version) + "; this library reads version " +
                         std::to_string(profile_version));
    top.text("gpu", p.gpu);
    top.text("source", p.source, false);
    top.integer("sms", p.sms);
    top.number("memory_bytes_per_us", p.memory_bytes_per_us);
    top.number("sustained_flops_per_us", p.sustained_flops_per_us, false);
    top.number("sustained_clock_mhz", p.sustained_clock_mhz, false);
    top.number("launch_us", p.launch_us, false);
    top.number("event_record_us", p.event_record_us, false);
    {
      const nlohmann::json* section = top.value("gemm", true);
      detail::json_fields gemm(section ? *section : detail::json_fields::absent(), "gemm", problems);
      gemm.list("m", p.gemm.m);
      gemm.list("n", p.gemm.n);
      gemm.list("k", p.gemm.k);
      gemm.list("us", p.gemm.us);
    }
    // An optional array of objects: `read(fields)` for each, `out` gets what it read.
    const auto objects = [&](const std::string& key, auto& out, const auto& read) {
      const nlohmann::json* array = top.value(key, false);
      if (array == nullptr) return;
      if (!array->is_array()) return problems.push_back(key + ": not an array");
      for (std::size_t i = 0; i < array->size(); ++i) {
        detail::json_fields fields((*array)[i], key + "[" + std::to_string(i) + "]", problems);
        out.push_back(read(fields));
      }
    };
    objects("grouped_gemm", p.grouped_gemm, [](detail::json_fields& f) {
      grouped_gemm_entry e;
      f.integer("groups", e.groups);
      f.integer("m", e.m);
      f.integer("n", e.n);
      f.integer("k", e.k);
      f.number("us", e.us);
      return e;
    });
    objects("attention", p.attention, [](detail::json_fields& f) {
      attention_table t;
      f.text("backend", t.backend);
      f.integer("head_dim", t.head_dim);
      f.list("seq", t.seq);
      f.list("heads", t.heads);
      f.list("forward_us", t.forward_us);
      f.list("backward_us", t.backward_us);
      return t;
    });
    if (const nlohmann::json* c = top.value("concurrency", false)) {
      detail::json_fields probe(*c, "concurrency", problems);
      probe.integer("copy_ctas", p.concurrency.copy_ctas);
      probe.integer("copy_ctas_per_sm", p.concurrency.copy_ctas_per_sm);
      probe.number("gemm_alone_us", p.concurrency.gemm_alone_us);
      probe.number("copy_alone_us", p.concurrency.copy_alone_us);
      probe.number("side_by_side_us", p.concurrency.side_by_side_us);
      if (c->contains("copy_packed_us")) probe.number("copy_packed_us", p.concurrency.copy_packed_us);
      if (c->contains("copy_beside_gemm_us")) probe.number("copy_beside_gemm_us", p.concurrency.copy_beside_gemm_us);
    }
  }
  // What the values say, once their types are right (a type problem already names the path).
  if (problems.empty())
    for (std::string& problem : sim::problems(p)) problems.push_back(std::move(problem));
  if (!problems.empty()) detail::throw_problems(source, problems);
  return p;
}

/// Reads a profile file. Throws std::runtime_error when it cannot be read or is not JSON, and
/// std::invalid_argument for its problems as `profile_from_json` does.
inline profile read_profile(const std::string& path) {
  const std::string source = "machine profile " + path;
  std::ifstream in(path);
  if (!in) throw std::runtime_error(source + ": cannot open the file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::out_of_range&) {
    throw std::invalid_argument(source + ": 1 problem:\n  a number too large for a double");
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(source + ": not JSON: " + e.what());
  }
  return profile_from_json(doc, source);
}

/// The document `profile_from_json` reads back as `p`. Throws std::invalid_argument when `p` has
/// problems: a profile is never written that could not be read.
inline nlohmann::json to_json(const profile& p) {
  if (const auto found = problems(p); !found.empty()) detail::throw_problems("to_json(profile '" + p.gpu + "')", found);
  nlohmann::json doc = {{"schema", profile_schema},
                        {"version", profile_version},
                        {"gpu", p.gpu},
                        {"source", p.source},
                        {"sms", p.sms},
                        {"memory_bytes_per_us", p.memory_bytes_per_us},
                        {"sustained_flops_per_us", p.sustained_flops_per_us},
                        {"sustained_clock_mhz", p.sustained_clock_mhz},
                        {"launch_us", p.launch_us},
                        {"event_record_us", p.event_record_us},
                        {"gemm", {{"m", p.gemm.m}, {"n", p.gemm.n}, {"k", p.gemm.k}, {"us", p.gemm.us}}}};
  nlohmann::json grouped = nlohmann::json::array();
  for (const grouped_gemm_entry& e : p.grouped_gemm)
    grouped.push_back({{"groups", e.groups}, {"m", e.m}, {"n", e.n}, {"k", e.k}, {"us", e.us}});
  doc["grouped_gemm"] = grouped;
  nlohmann::json attention = nlohmann::json::array();
  for (const attention_table& t : p.attention)
    attention.push_back({{"backend", t.backend},
                         {"head_dim", t.head_dim},
                         {"seq", t.seq},
                         {"heads", t.heads},
                         {"forward_us", t.forward_us},
                         {"backward_us", t.backward_us}});
  doc["attention"] = attention;
  if (p.concurrency.copy_ctas > 0) {
    doc["concurrency"] = {{"copy_ctas", p.concurrency.copy_ctas},
                          {"copy_ctas_per_sm", p.concurrency.copy_ctas_per_sm},
                          {"gemm_alone_us", p.concurrency.gemm_alone_us},
                          {"copy_alone_us", p.concurrency.copy_alone_us},
                          {"side_by_side_us", p.concurrency.side_by_side_us}};
    if (p.concurrency.copy_packed_us > 0) doc["concurrency"]["copy_packed_us"] = p.concurrency.copy_packed_us;
    if (p.concurrency.copy_beside_gemm_us > 0)
      doc["concurrency"]["copy_beside_gemm_us"] = p.concurrency.copy_beside_gemm_us;
  }
  return doc;
}

}  // namespace overlap::sim
