#pragma once
/// @file
/// The buffers one op reads or writes: indices into `program::buffers`, as a small vector. Up to
/// `inline_capacity` of them live inside the op itself, more on the heap. Most ops name one to
/// three buffers, so a program's ops are one array with no heap block per op: a pass over them
/// (the structure check, the simulator's set-up, the verifier) streams that array and nothing
/// else, and generating a step makes no allocation per op for its buffer lists.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace overlap::schedule {

class buffer_list {
 public:
  using value_type = int;
  using size_type = std::size_t;
  using iterator = int*;
  using const_iterator = const int*;
  static constexpr std::uint32_t inline_capacity = 4;

  buffer_list() noexcept {}
  buffer_list(std::initializer_list<int> v) { append(v.begin(), v.size()); }
  /// From the vectors the generators build their lists in.
  buffer_list(const std::vector<int>& v) { append(v.data(), v.size()); }  // NOLINT: implicit on purpose
  buffer_list(const buffer_list& o) { append(o.data(), o.size()); }
  buffer_list(buffer_list&& o) noexcept { take(o); }
  buffer_list& operator=(const buffer_list& o) {
    if (this != &o) {
      size_ = 0;
      append(o.data(), o.size());
    }
    return *this;
  }
  buffer_list& operator=(buffer_list&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  buffer_list& operator=(std::initializer_list<int> v) {
    size_ = 0;
    append(v.begin(), v.size());
    return *this;
  }
  ~buffer_list() { release(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int* data() { return on_heap() ? heap_ : inline_; }
  const int* data() const { return on_heap() ? heap_ : inline_; }
  int* begin() { return data(); }
  int* end() { return data() + size_; }
  const int* begin() const { return data(); }
  const int* end() const { return data() + size_; }
  int& operator[](std::size_t i) { return data()[i]; }
  int operator[](std::size_t i) const { return data()[i]; }
  void push_back(int b) {
    if (size_ == capacity_) grow(static_cast<std::size_t>(size_) + 1);
    data()[size_++] = b;
  }
  void clear() { size_ = 0; }

  friend bool operator==(const buffer_list& a, const buffer_list& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const { return capacity_ > inline_capacity; }
  /// Room for at least `n` (keeping the first size_).
  void grow(std::size_t n) {
    if (n > std::numeric_limits<std::uint32_t>::max() / 2)
      throw std::length_error("buffer_list: " + std::to_string(n) + " buffers for one op");
    const std::uint32_t capacity = std::max<std::uint32_t>(static_cast<std::uint32_t>(n), 2 * capacity_);
    int* const fresh = new int[capacity];
    if (size_ > 0) std::memcpy(fresh, data(), size_ * sizeof(int));
    release_heap();
    heap_ = fresh;
    capacity_ = capacity;
  }
  void append(const int* from, std::size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    if (n > 0) std::memcpy(data() + size_, from, n * sizeof(int));
    size_ += static_cast<std::uint32_t>(n);
  }
  void release_heap() {
    if (on_heap()) delete[] heap_;
  }
  /// Back to empty inline storage.
  void release() {
    release_heap();
    capacity_ = inline_capacity;
    size_ = 0;
  }
  /// `o`'s contents (its heap block, or a copy of its inline ones); `o` is left empty. `this`
  /// must hold no heap block.
  void take(buffer_list& o) noexcept {
    size_ = o.size_;
    capacity_ = o.capacity_;
    if (o.on_heap())
      heap_ = o.heap_;
    else
      std::memcpy(inline_, o.inline_, sizeof inline_);
    o.capacity_ = inline_capacity;
    o.size_ = 0;
  }

  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = inline_capacity;
  union {
    int inline_[inline_capacity] = {};
    int* heap_;
  };
};

}  // namespace overlap::schedule
