#pragma once
/// @file
/// A set of enum values (the `recompute_modules` and `cuda_graph_modules` lists).

#include <cstdint>

#include <overlap/settings/enums.hpp>

namespace overlap {

/// A constexpr set of values of the enum `E`, stored as a bit mask.
template <class E>
struct enum_set {
  std::uint32_t bits = 0;

  constexpr bool contains(E e) const { return is_enumerator(e) && (bits >> static_cast<unsigned>(e) & 1u) != 0; }
  constexpr void insert(E e) {
    if (is_enumerator(e)) bits |= 1u << static_cast<unsigned>(e);
  }
  constexpr bool empty() const { return bits == 0; }
  /// False when a bit is set that names no enumerator (possible only in run-time values).
  constexpr bool valid() const { return (bits >> enum_info<E>::count) == 0; }
  friend constexpr bool operator==(enum_set, enum_set) = default;
};

}  // namespace overlap
