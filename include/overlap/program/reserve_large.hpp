#pragma once
/// @file
/// Room in a large vector that the kernel backs with huge pages. Memory fresh from the system
/// costs more to touch than to fill: the kernel faults it in and zeroes it one 4 KiB page at a
/// time. Measured on the 2-core CI VM (64 MiB touched once per page, best of 5, on two days):
/// 0.61-0.70 ns per byte with 4 KiB pages (2.5-2.9 us a page), 0.10-0.13 ns per byte where the
/// kernel may back it with 2 MiB pages (madvise MADV_HUGEPAGE; transparent huge pages in their
/// default `madvise` mode). A step's programs (millions of ops of ~180 bytes) and the
/// simulator's per-op arrays both take such memory; sim/engine/large_array.hpp has the
/// simulator's allocator.

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace overlap::detail {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

/// Gives `v` room for at least `n` elements without touching it. Where that takes new memory of
/// two huge pages or more, the kernel is asked to back its whole huge pages with huge pages when
/// they are first touched (a hint: where transparent huge pages are off, nothing changes).
template <class T>
void reserve_large(std::vector<T>& v, std::size_t n) {
  if (v.capacity() >= n) return;
  v.reserve(n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const std::size_t bytes = v.capacity() * sizeof(T);
  if (bytes < 2 * huge_page_bytes) return;
  const auto at = reinterpret_cast<std::uintptr_t>(v.data());
  const std::uintptr_t first = (at + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  const std::uintptr_t last = (at + bytes) & ~(huge_page_bytes - 1);
  // The memory is the vector's: madvise only changes how the kernel backs it, and a failure
  // (no THP in this kernel) leaves it as it was.
  if (last > first) static_cast<void>(madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE));
#endif
}

/// Appends `x` to `v`, growing it as push_back does (twice its size) but through `reserve_large`.
template <class T>
void push_back_large(std::vector<T>& v, T&& x) {
  if (v.size() == v.capacity()) reserve_large(v, v.size() < 16 ? 16 : 2 * v.size());
  v.push_back(static_cast<T&&>(x));
}

}  // namespace overlap::detail
