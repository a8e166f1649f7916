#pragma once
/// @file
/// What makes a type an option: it names the `settings` field it sets (`overlap_field`) and
/// writes its value there (`apply`). Two options with the same field are the same option (OPT-1).

#include <overlap/settings/settings.hpp>

namespace overlap {

namespace detail {

/// Identifies a settings field by its member pointer: `tp<4>` and
/// `tensor_model_parallel_size<4>` both carry `field_key<&settings::tensor_model_parallel_size>`.
template <auto Member>
struct field_key {};

/// An option that stores `Value` into the settings field `Member`.
template <auto Member, auto Value>
struct value_option {
  using overlap_field = field_key<Member>;
  static constexpr void apply(settings& s) { s.*Member = Value; }
};

}  // namespace detail

/// A type that `config<...>` accepts.
template <class T>
concept option = requires(settings& s) {
  typename T::overlap_field;
  T::apply(s);
};

}  // namespace overlap
