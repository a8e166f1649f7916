#pragma once
/// @file
/// Human-readable output of resolved settings: one `name = value` line per upstream field, and
/// the environment as shell `export` lines (and as values, `environment_of`). Both walk the
/// reflected field list (reflect.hpp).

#include <cctype>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <overlap/settings/reflect.hpp>
#include <overlap/settings/resolved.hpp>

namespace overlap {

namespace detail {
inline void write_value(std::ostream& os, bool v) { os << (v ? "true" : "false"); }
template <class T>
requires std::is_arithmetic_v<T>
void write_value(std::ostream& os, T v) { os << v; }
template <class E>
requires std::is_enum_v<E>
void write_value(std::ostream& os, E v) { os << to_string(v); }
template <class T>
void write_value(std::ostream& os, const std::optional<T>& v) {
  if (v)
    write_value(os, *v);
  else
    os << "unset";
}
inline void write_slot(std::ostream& os, std::string_view name, const ub::slot& x) {
  os << "tp_comm_overlap_cfg." << name << " = " << to_string(x.method);
  if (x.method == ub::method::none) {
    os << '\n';
    return;
  }
  const char* separator = "(";
  reflect::for_each_field(x, [&](std::string_view field, const auto& v) {
    if (field == "method" || (field == "num_splits" && x.method != ub::method::pipeline)) return;
    os << separator << field << '=';
    write_value(os, v);
    separator = ", ";
  });
  os << ")\n";
}
/// The environment variable a field of `resolved_settings` stands for: its name in upper case.
inline std::string environment_name(std::string_view field) {
  std::string out(field);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace detail

/// Every resolved upstream field, one per line (the environment is `write_environment`'s).
inline void write_resolved(std::ostream& os, const resolved_settings& r) {
  bool environment = false;
  reflect::for_each_field(r, [&](std::string_view name, const auto& v) {
    environment = environment || name == reflect::first_environment_field;
    if (environment) return;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, ub::resolved_config>) {
      if (r.tp_comm_overlap)
        for (const ub::slot_id id : ub::all_slots) detail::write_slot(os, to_string(id), v[id]);
    } else {
      os << name << " = ";
      detail::write_value(os, v);
      os << '\n';
    }
  });
}

/// One variable of the environment the run needs.
struct environment_variable {
  std::string name;  ///< e.g. CUDA_DEVICE_MAX_CONNECTIONS
  int value = 0;
};

/// The environment the run needs, in field order; unset variables are left alone, so not listed.
inline std::vector<environment_variable> environment_of(const resolved_settings& r) {
  std::vector<environment_variable> out;
  bool environment = false;
  reflect::for_each_field(r, [&](std::string_view name, const auto& v) {
    environment = environment || name == reflect::first_environment_field;
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(v)>, std::optional<int>>)
      if (environment && v) out.push_back({detail::environment_name(name), *v});
  });
  return out;
}

/// The environment the run needs, as `export NAME=value` lines.
inline void write_environment(std::ostream& os, const resolved_settings& r) {
  for (const environment_variable& e : environment_of(r)) os << "export " << e.name << '=' << e.value << '\n';
}

}  // namespace overlap
