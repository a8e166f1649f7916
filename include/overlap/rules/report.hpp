#pragma once
/// @file
/// `overlap::report`: the violated rules, the notes and (when valid) the resolved settings of a
/// configuration, as returned by `check<Options...>()` and `validate(settings)`.

#include <cstddef>
#include <optional>
#include <string_view>

#include <overlap/rules/rule.hpp>
#include <overlap/settings/resolved.hpp>

namespace overlap {

/// One violated rule or note: its id and its message (the text after "[ID] ").
struct diagnostic {
  std::string_view id;
  std::string_view message;

  friend constexpr bool operator==(const diagnostic&, const diagnostic&) = default;

  /// Prints "[ID] message".
  template <class Stream>
  requires requires(Stream& os, std::string_view v) { os << v; }
  friend Stream& operator<<(Stream& os, const diagnostic& d) {
    os << std::string_view{"["} << d.id << std::string_view{"] "} << d.message;
    return os;
  }
};

/// A constexpr list of diagnostics with room for every rule of the table.
class diagnostic_list {
 public:
  constexpr const diagnostic* begin() const { return items_; }
  constexpr const diagnostic* end() const { return items_ + size_; }
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const diagnostic& operator[](std::size_t i) const { return items_[i]; }
  constexpr bool contains(std::string_view id) const {
    for (const diagnostic& d : *this)
      if (d.id == id) return true;
    return false;
  }
  constexpr void push_back(const rules::rule& x) { items_[size_++] = diagnostic{x.id, x.message()}; }

 private:
  diagnostic items_[rules::table_size]{};
  std::size_t size_ = 0;
};

/// The outcome of checking one configuration against the rule table.
class report {
 public:
  /// No E rule is violated.
  constexpr bool ok() const { return violations_.empty(); }
  /// The E rule `id` is violated.
  constexpr bool violates(std::string_view id) const { return violations_.contains(id); }
  /// The number of violated E rules.
  constexpr std::size_t count() const { return violations_.size(); }
  constexpr const diagnostic* begin() const { return violations_.begin(); }
  constexpr const diagnostic* end() const { return violations_.end(); }

  /// The N rules that apply (advice; they never make a configuration invalid).
  diagnostic_list notes{};
  /// The resolved settings, engaged when `ok()`.
  std::optional<resolved_settings> resolved{};

  constexpr void add_violation(const rules::rule& x) { violations_.push_back(x); }

 private:
  diagnostic_list violations_{};
};

}  // namespace overlap
