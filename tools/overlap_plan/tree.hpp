#pragma once
// overlap-plan: a Megatron-Bridge config as one JSON tree, whatever it was written in (the
// ConfigContainer YAML dump, the same as JSON, Hydra-style overrides on top), with the place
// each value came from ("file:line:column" or "override 'a.b=c'") for the messages.
//
// YAML goes through yaml-cpp (Debian's libyaml-cpp-dev: maintained, gives line and column of
// every node and of every parse error, ships a CMake package); JSON through nlohmann/json. Input
// that is too large, too deep or expands too much (YAML aliases) is refused with a message
// before it can exhaust memory or the stack. The reading is compiled once, in tree.cpp (the
// overlap_plan_reader library), so only that file includes yaml-cpp.

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <nlohmann/json.hpp>

namespace overlap_plan {

using json = nlohmann::ordered_json;

/// A config that cannot be read: the message names the file (and line and column, or the field).
struct input_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The config as a tree, and where each of its values was written (key: dotted path).
struct document {
  json tree = json::object();
  std::map<std::string, std::string> where;
  std::string name;  ///< the file, for messages

  /// "file:line:column" or "override '...'" for `path`, or the file name alone.
  std::string at(const std::string& path) const {
    const auto it = where.find(path);
    return it != where.end() ? it->second : name;
  }
};

inline constexpr std::uintmax_t max_file_bytes = 16u << 20;
inline constexpr int max_depth = 64;
inline constexpr std::size_t max_nodes = 1'000'000;

/// A string for a message: quoted, printable ASCII kept, the rest escaped, at most 60 characters.
inline std::string quote_text(std::string_view s) {
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < 60; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\')
      (out += '\\') += static_cast<char>(c);
    else if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 60) out += "...";
  return out + "\"";
}

/// A value for a message: strings quoted as above, the rest as compact JSON.
inline std::string shown(const json& v) {
  if (v.is_string()) return quote_text(v.get_ref<const std::string&>());
  if (v.is_object()) return "a mapping";
  if (v.is_array()) return "a list";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace detail {

/// YAML 1.2 core schema for a plain (unquoted) scalar: null, bool, integer, float, else string.
inline json plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  {
    std::int64_t v = 0;
    const char* first = s.data() + (s[0] == '+' ? 1 : 0);
    const char* last = s.data() + s.size();
    const auto [end, ec] = std::from_chars(first, last, v);
    if (end == last && first != last) {
      if (ec == std::errc{}) return v;
      return s;  // an integer too large for 64 bits: kept as text, the field's check names it
    }
  }
  {
    double v = 0;
    const char* first = s.data() + (s[0] == '+' ? 1 : 0);
    const char* last = s.data() + s.size();
    const auto [end, ec] = std::from_chars(first, last, v);
    if (end == last && first != last && ec == std::errc{} && s.find_first_of("0123456789") != std::string::npos)
      return v;
  }
  return s;
}

/// Levenshtein distance between `a` and `b` (short keys: a row at a time).
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace detail

/// Parses `text` (YAML, or JSON when `as_json`) named `name` into a document whose top level is a
/// mapping. Throws input_error with line and column on a syntax error.
document parse_text(std::string_view text, const std::string& name, bool as_json);

/// Reads and parses the file at `path`: JSON when it ends in .json or starts with '{', else YAML.
document read_file(const std::string& path);

/// How an override treats a key the document does not hold (`hydra`: as Hydra does).
enum class override_mode { hydra, set_or_add };

/// Applies one override with Hydra's semantics: `a.b=value` sets a key the document holds (a key
/// it does not hold is an error naming the closest ones: a typo is never silently added),
/// `+a.b=value` adds one it does not hold (one it holds is an error), `++a.b=value` sets or adds,
/// `~a.b` deletes one it holds. The value is parsed as a YAML scalar or flow collection; sections
/// that `+` or `++` need are created. `set_or_add` reads every form but `~` as `++` (for building
/// a fragment from overrides). Throws input_error (exit status 2).
void apply_override(document& doc, std::string_view text, override_mode mode = override_mode::hydra);

/// The tree as YAML (block style, keys in their order).
std::string to_yaml(const json& v);

}  // namespace overlap_plan
