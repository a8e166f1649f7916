#pragma once
// overlap-plan: a config value (a node of the tree, tree.hpp) as a settings value: integers,
// booleans, enums by their upstream spelling, lists of enum names, versions; each refuses a value
// of the wrong type with an input_error naming the place and the field.

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

#include <overlap/settings/reflect_settings.hpp>
#include <overlap/settings/ub.hpp>

#include "tree.hpp"

namespace overlap_plan {

namespace ov = overlap;

namespace detail {

/// The node at dotted `path`, or null where the tree has none.
inline const json* find(const json& tree, std::string_view path) {
  const json* node = &tree;
  while (!path.empty()) {
    const auto dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (!node->is_object()) return nullptr;
    const auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
    path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
  }
  return node;
}
/// The value at `path`, or null when it is absent or null (Bridge's "not specified").
inline const json* given(const json& tree, std::string_view path) {
  const json* v = find(tree, path);
  return v && !v->is_null() ? v : nullptr;
}
inline bool section(const json& tree, std::string_view name) {
  const json* v = find(tree, name);
  return v && v->is_object();
}

template <class T>
using is_optional = ov::reflect::is_optional<T>;
template <class T>
using is_enum_set = ov::reflect::is_enum_set<T>;

[[noreturn]] inline void bad(const document& doc, const std::string& path, const std::string& what) {
  throw input_error(doc.at(path) + ": " + path + ": " + what);
}

/// An enum from its upstream spelling; Python enum dumps ("CudaGraphImpl.local") by the last part.
template <class E>
E to_enum(const document& doc, const std::string& path, const json& v) {
  std::string allowed;
  for (const std::string_view n : ov::enum_info<E>::names) (allowed += allowed.empty() ? "" : ", ") += n;
  if (!v.is_string()) bad(doc, path, "expected one of " + allowed + ", got " + shown(v));
  std::string text = v.get<std::string>();
  if (const auto dot = text.rfind('.'); dot != std::string::npos) text = text.substr(dot + 1);
  for (std::size_t i = 0; i < ov::enum_info<E>::count; ++i)
    if (ov::enum_info<E>::names[i] == text) return static_cast<E>(i);
  bad(doc, path, "unknown value " + shown(v) + "; expected one of " + allowed);
}

template <class I>
I to_integer(const document& doc, const std::string& path, const json& v) {
  if (v.is_boolean() || !v.is_number_integer()) bad(doc, path, "expected an integer, got " + shown(v));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<I>::max()))
    bad(doc, path, "integer " + shown(v) + " is out of range");
  const std::int64_t x = v.get<std::int64_t>();
  if (x < std::numeric_limits<I>::min() || x > std::numeric_limits<I>::max())
    bad(doc, path, "integer " + shown(v) + " is out of range");
  return static_cast<I>(x);
}

inline bool to_bool(const document& doc, const std::string& path, const json& v) {
  if (!v.is_boolean()) bad(doc, path, "expected true or false, got " + shown(v));
  return v.get<bool>();
}

/// A list of enum names: a YAML list, or one string split on ',' (upstream CG-1). "full" and ""
/// mean the whole layer, which is the empty list.
template <class E>
ov::enum_set<E> to_enum_set(const document& doc, const std::string& path, const json& v) {
  ov::enum_set<E> out;
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    if (text.empty() || text == "full") return out;
    std::size_t start = 0;
    for (std::size_t i = 0, item = 0; i <= text.size(); ++i) {
      if (i != text.size() && text[i] != ',') continue;
      out.insert(to_enum<E>(doc, path + "[" + std::to_string(item++) + "]", json(text.substr(start, i - start))));
      start = i + 1;
    }
    return out;
  }
  if (!v.is_array()) bad(doc, path, "expected a list of names, got " + shown(v));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (v[i].is_null()) continue;
    out.insert(to_enum<E>(doc, p, v[i]));
  }
  return out;
}

inline ov::version to_version(const document& doc, const std::string& path, const json& v) {
  ov::version out;
  if (!v.is_string()) bad(doc, path, "expected a version \"major.minor.patch\", got " + shown(v));
  const std::string text = v.get<std::string>();
  int parts[3] = {0, 0, 0};
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const auto end = text.find('.', start);
    const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), parts[i]);
    if (part.empty() || ec != std::errc{} || p != part.data() + part.size() || parts[i] < 0)
      bad(doc, path, "expected a version \"major.minor.patch\", got " + shown(v));
    if (end == std::string::npos) break;
    start = end + 1;
    if (i == 2) bad(doc, path, "expected a version \"major.minor.patch\", got " + shown(v));
  }
  out.major = parts[0];
  out.minor = parts[1];
  out.patch = parts[2];
  return out;
}

/// The torch dtypes Megatron-Core's optimizer takes, by name (after "torch.") and size in bytes;
/// the first of a size is the one written (write_config).
struct torch_dtype {
  std::string_view name;
  int bytes;
};
inline constexpr torch_dtype torch_dtypes[] = {{"float32", 4}, {"bfloat16", 2}, {"float16", 2},
                                               {"uint8", 1},   {"float", 4},    {"half", 2}};

/// A torch dtype's size in bytes: as Bridge dumps one ({_call_: false, _target_: torch.bfloat16},
/// which the tree reads as its name) or as its name ("torch.bfloat16", "bfloat16").
inline int to_dtype_bytes(const document& doc, const std::string& path, const json& v) {
  const json* name = v.is_object() ? given(v, "_target_") : &v;
  std::string allowed;
  for (const torch_dtype& d : torch_dtypes) (allowed += allowed.empty() ? "torch." : ", torch.") += d.name;
  if (!name || !name->is_string()) bad(doc, path, "expected a torch dtype (" + allowed + "), got " + shown(v));
  std::string_view text = name->get_ref<const std::string&>();
  if (text.starts_with("torch.")) text.remove_prefix(6);
  for (const torch_dtype& d : torch_dtypes)
    if (d.name == text) return d.bytes;
  bad(doc, path, "unknown torch dtype " + shown(*name) + "; expected one of " + allowed);
}

/// The name write_config gives a dtype of `bytes`.
inline std::string torch_dtype_name(int bytes) {
  for (const torch_dtype& d : torch_dtypes)
    if (d.bytes == bytes) return "torch." + std::string(d.name);
  throw std::invalid_argument("no torch dtype of " + std::to_string(bytes) + " bytes");
}

/// Sets `path` (dotted) in `tree`, making the sections it needs.
inline void put(json& tree, std::string_view path, json value) {
  json* node = &tree;
  while (true) {
    const auto dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (dot == std::string_view::npos) {
      (*node)[key] = std::move(value);
      return;
    }
    node = &(*node)[key];
    path.remove_prefix(dot + 1);
  }
}

/// An enum set as the list of its names, in the enum's order.
template <class E>
json enum_list(const ov::enum_set<E>& set) {
  json out = json::array();
  for (std::size_t i = 0; i < ov::enum_info<E>::count; ++i)
    if (set.contains(static_cast<E>(i))) out.push_back(std::string(ov::enum_info<E>::names[i]));
  return out;
}

/// A userbuffer slot as the mapping Bridge dumps: each knob by its name.
inline json slot_tree(const ov::ub::slot& x) {
  json out = json::object();
  ov::reflect::for_each_field(x, [&](std::string_view name, const auto& v) {
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (std::is_enum_v<T>)
      out[std::string(name)] = std::string(ov::to_string(v));
    else
      out[std::string(name)] = v;
  });
  return out;
}

}  // namespace detail

}  // namespace overlap_plan
