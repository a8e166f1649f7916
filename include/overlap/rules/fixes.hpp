#pragma once
/// @file
/// `overlap::single_field_fixes(settings, ids)`: for each violated rule, the changes of one
/// settings field that clear it and make no other rule fire. Every reflected field is tried with
/// its other values: a flag flipped (an unset one set either way), an enum's other values, an
/// optional emptied (or set to each enum value), a set without one of its members. Sizes and the
/// userbuffer config are not guessed at. Not included by <overlap/overlap.hpp>: it walks the
/// settings by reflection.

#include <cstddef>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>
#include <vector>

#include <overlap/rules/validate.hpp>
#include <overlap/settings/reflect_settings.hpp>

namespace overlap {

/// One settings field changed: its name, and the settings with it changed.
struct field_fix {
  std::string_view field;
  settings result;
};

/// The fixes of one violated rule.
struct rule_fixes {
  std::string_view id;
  std::vector<field_fix> fixes;
};

namespace detail {
/// The other values field value `current` is tried at.
template <class T>
std::vector<T> alternatives(const T& current) {
  std::vector<T> out;
  if constexpr (std::is_same_v<T, bool>) {
    out.push_back(!current);
  } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
    if (current)
      out.push_back(!*current);  // unsetting reads like false: not offered twice
    else
      out = {true, false};
  } else if constexpr (std::is_enum_v<T>) {
    for (std::size_t i = 0; i < enum_info<T>::count; ++i)
      if (static_cast<T>(i) != current) out.push_back(static_cast<T>(i));
  } else if constexpr (reflect::is_optional<T>::value) {
    using V = typename T::value_type;
    if constexpr (std::is_arithmetic_v<V> || std::is_enum_v<V>) {
      if (current) out.push_back(T{});
      if constexpr (std::is_enum_v<V>)
        for (std::size_t i = 0; i < enum_info<V>::count; ++i)
          if (!current || static_cast<V>(i) != *current) out.push_back(static_cast<V>(i));
    }
  } else if constexpr (reflect::is_enum_set<T>::value) {
    using E = typename reflect::is_enum_set<T>::element;
    for (std::size_t i = 0; i < enum_info<E>::count; ++i)
      if (current.contains(static_cast<E>(i))) {
        T smaller = current;
        smaller.bits &= ~(1u << i);
        out.push_back(smaller);
      }
  }
  return out;
}

inline std::set<std::string_view> violated_ids(const settings& s) {
  std::set<std::string_view> out;
  for (const diagnostic& d : validate(s)) out.insert(d.id);
  return out;
}
}  // namespace detail

/// For each rule of `ids` (rules `s` violates), the single-field changes that clear it without a
/// rule firing that did not fire before; fields in declaration order.
inline std::vector<rule_fixes> single_field_fixes(const settings& s, const std::vector<std::string_view>& ids) {
  std::vector<rule_fixes> out;
  for (const std::string_view id : ids) out.push_back({id, {}});
  const std::set<std::string_view> before = detail::violated_ids(s);
  reflect::for_each_field(s, [&](std::string_view field, const auto& current) {
    using T = std::remove_cvref_t<decltype(current)>;
    for (const T& alt : detail::alternatives(current)) {
      settings changed = s;
      reflect::for_each_field(changed, [&](std::string_view f, auto& m) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(m)>, T>)
          if (f == field) m = alt;
      });
      const std::set<std::string_view> after = detail::violated_ids(changed);
      bool new_ones = false;
      for (const std::string_view id : after) new_ones = new_ones || !before.count(id);
      if (new_ones) continue;
      for (rule_fixes& r : out)
        if (!after.count(r.id)) r.fixes.push_back({field, changed});
    }
  });
  return out;
}

}  // namespace overlap
