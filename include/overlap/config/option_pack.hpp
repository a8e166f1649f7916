#pragma once
/// @file
/// The type-level work on `config<Options...>`: gathering the options, detecting types that are
/// not options (OPT-2), options given twice (OPT-1) and values outside their domain (OPT-3), and
/// reducing the options to one `settings` value.

#include <type_traits>

#include <boost/hana/filter.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/set.hpp>
#include <boost/hana/transform.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <overlap/config/option.hpp>
#include <overlap/rules/derive.hpp>
#include <overlap/rules/facts.hpp>

namespace overlap::detail {

template <class T>
struct is_option_type : std::bool_constant<option<T>> {};

template <class T>
struct field_of {
  using type = typename T::overlap_field;
};

/// OPT-3 for one option: its value, applied to default settings, is in the domain.
template <class T>
constexpr bool option_in_domain() {
  if constexpr (option<T>) {
    settings s{};
    T::apply(s);
    return rules::in_domain(s);
  } else {
    return true;
  }
}

template <class... Options>
struct option_pack {
  static constexpr auto given = boost::hana::tuple_t<Options...>;
  static constexpr auto options = boost::hana::filter(given, boost::hana::trait<is_option_type>);
  static constexpr auto fields =
      boost::hana::to_set(boost::hana::transform(options, boost::hana::metafunction<field_of>));

  /// OPT-2: every type given is an option.
  static constexpr bool all_options =
      decltype(boost::hana::length(options))::value == sizeof...(Options);
  /// OPT-1: no field is set twice.
  static constexpr bool unique_fields =
      decltype(boost::hana::length(fields))::value == decltype(boost::hana::length(options))::value;
  /// OPT-3: every option's value is in its domain.
  static constexpr bool all_in_domain = (option_in_domain<Options>() && ...);
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
