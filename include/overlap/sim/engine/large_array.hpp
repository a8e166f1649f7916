#pragma once
/// @file
/// Memory for the simulator's per-op arrays (a step of millions of ops needs tens of MiB of them),
/// on huge pages where the kernel allows them: program/reserve_large.hpp says why and what it
/// saves. Two ways to get huge pages: the simulator's own arrays use `huge_page_allocator`, which
/// maps an array of a quarter of a huge page or more on whole, aligned huge pages; a vector with
/// the standard allocator (the result's intervals, which the caller owns) gets the hint from
/// `reserve_large` for the whole huge pages inside it, which pays only from two huge pages on.

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include <overlap/program/reserve_large.hpp>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace overlap::sim::detail {

using overlap::detail::huge_page_bytes;

/// An allocator for the simulator's internal arrays: below a quarter of a huge page it takes what
/// operator new gives; from there on (Linux) whole huge pages of its own, 2 MiB-aligned, which the
/// kernel is asked to back with huge pages when they are first touched (a hint: where transparent
/// huge pages are off, they fault in 4 KiB pages as before). A mapping is at most four times
/// the array: zeroing a whole huge page (~0.27 ms here) costs less than faulting a quarter of one
/// in 4 KiB pages (128 faults, ~0.36 ms). Its memory goes back to the system when the array is
/// freed.
template <class T>
struct huge_page_allocator {
  using value_type = T;
  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}

  static bool mapped(std::size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    return n * sizeof(T) >= huge_page_bytes / 4;
#else
    static_cast<void>(n);
    return false;
#endif
  }
  static std::size_t mapped_bytes(std::size_t n) {
    return (n * sizeof(T) + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  }

  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / 2 / sizeof(T)) throw std::bad_array_new_length();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (mapped(n)) {
      // One huge page more than needed, then the unaligned head and the tail given back.
      const std::size_t bytes = mapped_bytes(n);
      void* raw = mmap(nullptr, bytes + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      const auto at = reinterpret_cast<std::uintptr_t>(raw);
      const std::uintptr_t aligned = (at + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
      if (aligned > at) munmap(raw, aligned - at);
      if (const std::size_t tail = at + huge_page_bytes - aligned; tail > 0)
        munmap(reinterpret_cast<void*>(aligned + bytes), tail);
      // A failure (no THP in this kernel) leaves the mapping in 4 KiB pages.
      static_cast<void>(madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE));
      return reinterpret_cast<T*>(aligned);
    }
#endif
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (mapped(n)) {
      munmap(p, mapped_bytes(n));
      return;
    }
#endif
    ::operator delete(p);
  }
  friend bool operator==(const huge_page_allocator&, const huge_page_allocator&) { return true; }
};

/// A vector of the simulator's per-op state (see huge_page_allocator).
template <class T>
using large_vector = std::vector<T, huge_page_allocator<T>>;

using overlap::detail::reserve_large;

}  // namespace overlap::sim::detail
