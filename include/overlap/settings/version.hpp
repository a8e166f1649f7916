#pragma once
/// @file
/// A Transformer Engine version triple.

#include <compare>

namespace overlap {

/// A `major.minor.patch` version, ordered lexicographically.
struct version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  friend constexpr bool operator==(const version&, const version&) = default;
  friend constexpr auto operator<=>(const version&, const version&) = default;
};

}  // namespace overlap
