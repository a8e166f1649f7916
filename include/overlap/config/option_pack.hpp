#pragma once
/// @file
/// The type-level work on `config<Options...>`: gathering the options, detecting types that are
/// not options (OPT-2), options given twice (OPT-1) and values outside their domain (OPT-3), and
/// reducing the options to one `settings` value.

#include <type_traits>

#include <overlap/config/option.hpp>
#include <overlap/rules/derive.hpp>
#include <overlap/rules/facts.hpp>

namespace overlap::detail {

/// OPT-3 for one option: its value, applied to default settings, is in the domain. A variable,
/// so each option type is evaluated once per translation unit however many configs use it.
template <class T>
inline constexpr bool option_in_domain = [] {
  if constexpr (option<T>) {
    settings s{};
    T::apply(s);
    return rules::in_domain(s);
  } else {
    return true;
  }
}();

/// The field an option sets; a type that is not an option stands for itself, so it never
/// collides with another field (OPT-2 reports it instead).
template <class T>
struct field_of {
  using type = T;
};
template <option T>
struct field_of<T> {
  using type = typename T::overlap_field;
};

template <class Field, class... Fields>
inline constexpr int occurrences = (int{std::is_same_v<Field, Fields>} + ... + 0);

template <class... Options>
struct option_pack {
  /// OPT-2: every type given is an option.
  static constexpr bool all_options = (option<Options> && ...);
  /// OPT-1: no field is set twice.
  static constexpr bool unique_fields =
      ((occurrences<typename field_of<Options>::type, typename field_of<Options>::type...> == 1) && ...);
  /// OPT-3: every option's value is in its domain.
  static constexpr bool all_in_domain = (option_in_domain<Options> && ...);
  /// No option rule fires: the settings value below is meaningful.
  static constexpr bool options_ok = all_options && unique_fields && all_in_domain;

  /// The user's settings; default settings when an option rule fires.
  static constexpr settings value = [] {
    settings s{};
    if constexpr (options_ok) (Options::apply(s), ...);
    return s;
  }();
  static constexpr resolved_settings resolved = derive(value);
};

}  // namespace overlap::detail
