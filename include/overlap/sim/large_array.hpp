#pragma once
/// @file
/// Memory for the simulator's per-op arrays (a step of millions of ops needs tens of MiB of them).
/// Memory fresh from the system costs more to touch than to simulate on: the kernel faults it in
/// and zeroes it one 4 KiB page at a time. Measured on the 2-core CI VM (64 MiB touched once per
/// page, best of 5): 0.61-0.70 ns per byte with 4 KiB pages, 0.10 ns per byte where the kernel
/// may back it with 2 MiB pages (madvise MADV_HUGEPAGE; transparent huge pages in their default
/// `madvise` mode). A 242k-op step touches ~25 MiB of such arrays: ~15 ms against ~2.5 ms.

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace overlap::sim::detail {

/// Below this an array takes what malloc gives: a huge page would hold little of it.
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

}  // namespace overlap::sim::detail
