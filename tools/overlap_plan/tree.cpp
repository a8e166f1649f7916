// The reading of tree.hpp: YAML and JSON text into a document, overrides, and YAML out.
#include "tree.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <yaml-cpp/yaml.h>

namespace overlap_plan {
namespace detail {
namespace {

struct yaml_converter {
  document& doc;
  std::size_t nodes = 0;

  std::string mark(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    if (m.line < 0) return doc.name;
    return doc.name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }

  json convert(const YAML::Node& n, const std::string& path, int depth) {
    if (++nodes > max_nodes)
      throw input_error(doc.name + ": more than " + std::to_string(max_nodes) +
                        " values (YAML aliases expanding?); not a Bridge config");
    if (depth > max_depth)
      throw input_error(mark(n) + ": nested deeper than " + std::to_string(max_depth) + " levels; not a Bridge config");
    if (!path.empty()) doc.where[path] = mark(n);
    switch (n.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined: return nullptr;
      case YAML::NodeType::Scalar:
        // Quoted scalars (tag "!") are strings whatever they spell.
        if (n.Tag() == "!") return n.Scalar();
        return plain_scalar(n.Scalar());
      case YAML::NodeType::Sequence: {
        json out = json::array();
        std::size_t i = 0;
        for (const YAML::Node& item : n)
          out.push_back(convert(item, path + "[" + std::to_string(i++) + "]", depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        // Hydra's `_call_: true` objects are built by Python at launch; nothing here can evaluate
        // them. One with `_call_: false` names a Python object without calling it (a torch dtype,
        // a function): it reads as that name.
        if (const YAML::Node call = n["_call_"]) {
          const YAML::Node target = n["_target_"];
          if (call.IsScalar() && plain_scalar(call.Scalar()) == json(false) && target && target.IsScalar())
            return target.Scalar();
          return nullptr;
        }
        for (const auto& kv : n) {
          if (kv.first.Type() != YAML::NodeType::Scalar)
            throw input_error(mark(kv.first) + ": a mapping key must be a plain name");
          const std::string key = kv.first.Scalar();
          const std::string child = path.empty() ? key : path + "." + key;
          out[key] = convert(kv.second, child, depth + 1);
        }
        return out;
      }
    }
    return nullptr;
  }
};

/// Line and column of a byte offset, both from 1.
std::string line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

/// "; did you mean a.b or a.c?": the keys of `section` (at `prefix`) closest to `key`, at most
/// three within a fifth of its length (two edits for short keys); empty when none is close.
std::string closest_keys(const json& section, const std::string& prefix, const std::string& key) {
  if (!section.is_object()) return "";
  std::vector<std::pair<std::size_t, std::string>> near;
  const std::size_t most = std::max<std::size_t>(2, key.size() / 5);
  for (const auto& [k, v] : section.items())
    if (const std::size_t d = edit_distance(key, k); d <= most) near.emplace_back(d, k);
  if (near.empty()) return "";
  std::sort(near.begin(), near.end());
  std::string out = "; did you mean ";
  for (std::size_t i = 0; i < near.size() && i < 3; ++i)
    out += (i == 0 ? "" : i + 1 == std::min<std::size_t>(near.size(), 3) ? " or " : ", ") + prefix + near[i].second;
  return out + "?";
}

/// The tree as YAML (block style, keys in their order).
void emit_yaml(YAML::Emitter& out, const json& v) {
  if (v.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, child] : v.items()) {
      out << YAML::Key << k << YAML::Value;
      emit_yaml(out, child);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& child : v) emit_yaml(out, child);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    // Plain where YAML reads it back as the same string, quoted where it would not ("true", "4").
    const std::string& text = v.get_ref<const std::string&>();
    const json plain = detail::plain_scalar(text);
    if (plain.is_string() && plain.get_ref<const std::string&>() == text)
      out << text;
    else
      out << YAML::DoubleQuoted << text;
  } else if (v.is_boolean()) {
    out << YAML::TrueFalseBool << YAML::LowerCase << v.get<bool>();
  } else if (v.is_number_integer()) {
    out << v.get<std::int64_t>();
  } else if (v.is_number()) {
    out << v.get<double>();
  } else {
    out << YAML::Null;
  }
}

}  // namespace

/// Levenshtein distance between `a` and `b` (short keys: a row at a time).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace detail

/// Parses `text` (YAML, or JSON when `as_json`) named `name` into a document whose top level is a
/// mapping. Throws input_error with line and column on a syntax error.
document parse_text(std::string_view text, const std::string& name, bool as_json) {
  document doc;
  doc.name = name;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw input_error(name + ": the file is empty; expected a Bridge ConfigContainer (model:, comm_overlap:, ...)");
  if (as_json) {
    try {
      doc.tree = json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
      const std::string what = e.what();
      const auto colon = what.find("syntax error");
      throw input_error(name + ":" + detail::line_column(text, e.byte == 0 ? 0 : e.byte - 1) +
                        ": invalid JSON: " + (colon == std::string::npos ? what : what.substr(colon)));
    } catch (const json::exception& e) {  // e.g. a number too large for a double
      const std::string what = e.what();
      const auto bracket = what.find("] ");
      throw input_error(name + ": invalid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2)));
    }
    // Depth and size of a JSON tree (nlohmann parses without recursion; the checks below don't).
    std::size_t nodes = 0;
    const auto walk = [&](const auto& self, const json& v, const std::string& path, int depth) -> void {
      if (++nodes > max_nodes) throw input_error(name + ": more than " + std::to_string(max_nodes) + " values");
      if (depth > max_depth)
        throw input_error(name + ": " + path + ": nested deeper than " + std::to_string(max_depth) + " levels");
      if (v.is_object())
        for (const auto& [k, child] : v.items()) self(self, child, path.empty() ? k : path + "." + k, depth + 1);
      if (v.is_array())
        for (const auto& child : v) self(self, child, path + "[]", depth + 1);
    };
    walk(walk, doc.tree, "", 0);
  } else {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      throw input_error(name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                        ": invalid YAML: " + e.msg);
    }
    detail::yaml_converter c{doc};
    try {
      doc.tree = c.convert(root, "", 0);
    } catch (const YAML::Exception& e) {
      throw input_error(name + ": invalid YAML: " + e.msg);
    }
  }
  if (!doc.tree.is_object())
    throw input_error(name + ": the top level is " + (doc.tree.is_null() ? std::string("empty") : shown(doc.tree)) +
                      ", not a mapping of sections (model:, comm_overlap:, ddp:, ...)");
  return doc;
}

/// Reads and parses the file at `path`: JSON when it ends in .json or starts with '{', else YAML.
document read_file(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw input_error(path + ": no such file");
  if (std::filesystem::is_directory(st)) throw input_error(path + ": is a directory, not a config file");
  if (!std::filesystem::is_regular_file(st)) throw input_error(path + ": not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw input_error(path + ": cannot read its size: " + ec.message());
  if (size > max_file_bytes)
    throw input_error(path + ": " + std::to_string(size) + " bytes; a Bridge config is far smaller (limit " +
                      std::to_string(max_file_bytes >> 20) + " MiB)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path + ": cannot be opened for reading");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const auto first = s.find_first_not_of(" \t\r\n");
  const bool as_json = path.ends_with(".json") || (first != std::string::npos && s[first] == '{');
  return parse_text(s, path, as_json);
}

/// Applies one override with Hydra's semantics: `a.b=value` sets a key the document holds (a key
/// it does not hold is an error naming the closest ones: a typo is never silently added),
/// `+a.b=value` adds one it does not hold (one it holds is an error), `++a.b=value` sets or adds,
/// `~a.b` deletes one it holds. The value is parsed as a YAML scalar or flow collection; sections
/// that `+` or `++` need are created. `set_or_add` reads every form but `~` as `++` (for building
/// a fragment from overrides). Throws input_error (exit status 2).
void apply_override(document& doc, std::string_view text, override_mode mode) {
  const std::string where = "override '" + std::string(text) + "'";
  if (text.empty()) throw input_error("empty override; write section.field=value");
  enum { set, add, set_or_add, remove } op = set;
  if (text[0] == '~') {
    op = remove;
    text.remove_prefix(1);
  } else if (text.starts_with("++")) {
    op = set_or_add;
    text.remove_prefix(2);
  } else if (text[0] == '+') {
    op = add;
    text.remove_prefix(1);
  }
  if (mode == override_mode::set_or_add && op != remove) op = set_or_add;
  const auto eq = text.find('=');
  if (op != remove && eq == std::string_view::npos) throw input_error(where + ": expected section.field=value");
  const std::string path(text.substr(0, eq));
  if (path.empty() || path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos)
    throw input_error(where + ": " + quote_text(path) + " is not a dotted field path");
  const auto absent = [&](const json& section, const std::string& prefix, const std::string& key,
                          const std::string& at) {
    return input_error(where + ": the config has no " + quote_text(at) + detail::closest_keys(section, prefix, key) +
                       (op == remove ? "" : " (+" + path + "=... adds a key, ++" + path + "=... sets or adds)"));
  };
  json* node = &doc.tree;
  std::size_t start = 0;
  for (;;) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const std::string prefix = path.substr(0, start);  // "a.b." before this key
    const bool holds = node->is_object() && node->contains(key);
    if (dot == std::string::npos) {
      if (!holds && (op == set || op == remove)) throw absent(*node, prefix, key, path);
      if (holds && op == add)
        throw input_error(where + ": " + path + " is already in the config (at " + doc.at(path) + "); " + path +
                          "=... sets it, ++" + path + "=... sets or adds");
      json value;
      if (op != remove) {
        document parsed;
        parsed.name = where;
        try {
          const YAML::Node n = YAML::Load(std::string(text.substr(eq + 1)));
          detail::yaml_converter c{parsed};
          value = c.convert(n, "", 1);
        } catch (const YAML::Exception& e) {
          throw input_error(where + ": the value is not a YAML value: " + e.msg);
        }
      }
      // Nothing under the path keeps a place from the file: it is gone, or the override's now.
      for (auto it = doc.where.lower_bound(path); it != doc.where.end() && it->first.starts_with(path);)
        it = doc.where.erase(it);
      if (op == remove) {
        node->erase(key);
        return;
      }
      (*node)[key] = value;
      doc.where[path] = where;
      return;
    }
    if (!holds && (op == set || op == remove)) throw absent(*node, prefix, key, prefix + key);
    json& next = (*node)[key];
    if (next.is_null()) next = json::object();
    if (!next.is_object()) throw input_error(where + ": " + prefix + key + " is " + shown(next) + ", not a section");
    node = &next;
    start = dot + 1;
  }
}

std::string to_yaml(const json& v) {
  YAML::Emitter out;
  detail::emit_yaml(out, v);
  return std::string(out.c_str()) + "\n";
}

}  // namespace overlap_plan
