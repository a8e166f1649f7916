#pragma once
/// @file
/// The overlap families, listed once: every array indexed by family takes its size from here.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace overlap::schedule {

/// X(name): the families, in the order of `family` after `none`.
#define OVERLAP_FAMILIES(X) X(tp) X(dp) X(pp) X(ep)

/// The overlap family an op belongs to, for exposed-communication accounting; `none` for compute
/// and for communication outside the four families.
enum class family : std::uint8_t {
  none,
#define OVERLAP_FAMILY_ENUM(name) name,
  OVERLAP_FAMILIES(OVERLAP_FAMILY_ENUM)
#undef OVERLAP_FAMILY_ENUM
};

/// How many values `family` has, `none` included: the size of per-family arrays.
inline constexpr std::size_t family_count = 1
#define OVERLAP_FAMILY_COUNT(name) +1
    OVERLAP_FAMILIES(OVERLAP_FAMILY_COUNT)
#undef OVERLAP_FAMILY_COUNT
    ;

/// The four families, without `none`.
inline constexpr std::array<family, family_count - 1> families{
#define OVERLAP_FAMILY_VALUE(name) family::name,
    OVERLAP_FAMILIES(OVERLAP_FAMILY_VALUE)
#undef OVERLAP_FAMILY_VALUE
};

/// An array with one entry per family (`none` at index 0).
template <class T>
using per_family_array = std::array<T, family_count>;

constexpr std::string_view to_string(family f) {
  switch (f) {
    case family::none: return "none";
#define OVERLAP_FAMILY_NAME(name) \
  case family::name: return #name;
      OVERLAP_FAMILIES(OVERLAP_FAMILY_NAME)
#undef OVERLAP_FAMILY_NAME
  }
  return "none";
}

}  // namespace overlap::schedule
