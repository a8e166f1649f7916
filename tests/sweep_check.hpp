#pragma once
// Runs a block of the sweep: every configuration's check<...>() report must equal validate()'s on
// the field-by-field settings (same violations in the same order, same notes, same resolved), and
// the options must reduce to exactly those settings.

#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "sweep.hpp"

namespace sweep {

struct tally {
  std::size_t configs = 0;
  std::size_t valid = 0;
  std::size_t mismatches = 0;
  std::string first_mismatch;
  std::set<std::string_view> rules_seen;
};

inline std::string describe(const ov::report& r) {
  std::ostringstream os;
  for (const auto& d : r) os << d.id << ' ';
  os << "| notes: ";
  for (const auto& d : r.notes) os << d.id << ' ';
  os << "| resolved: " << (r.resolved ? "yes" : "no");
  return os.str();
}

inline bool same(const ov::report& a, const ov::report& b) {
  return a.count() == b.count() && std::equal(a.begin(), a.end(), b.begin()) && a.notes.size() == b.notes.size() &&
         std::equal(a.notes.begin(), a.notes.end(), b.notes.begin()) && a.resolved == b.resolved;
}

inline void record(std::size_t i, const typed_result& typed_result, const ov::settings& settings, tally& t) {
  const ov::report& typed = typed_result.report;
  const ov::report runtime = ov::validate(settings);
  ++t.configs;
  if (typed.ok()) ++t.valid;
  for (const auto& d : typed) t.rules_seen.insert(d.id);
  for (const auto& d : typed.notes) t.rules_seen.insert(d.id);
  const bool same_settings = !typed_result.settings || *typed_result.settings == settings;
  if (!same(typed, runtime) || !same_settings) {
    if (t.mismatches++ == 0)
      t.first_mismatch = "config " + std::to_string(i) + ": check<> " + describe(typed) + " / validate " +
                         describe(runtime) + (same_settings ? "" : " (the settings differ)");
  }
}

template <std::size_t I>
void run_one(tally& t) {
  record(I, checked<I>(), settings_of(I), t);
}

/// A table of one function per configuration (a fold over 1000 calls would exceed clang's nesting
/// limit, and one frame holding 1000 reports would exceed the stack).
template <std::size_t Begin, std::size_t... K>
void run_block(std::index_sequence<K...>, tally& t) {
  static constexpr void (*runs[])(tally&) = {&run_one<Begin + K>...};
  for (auto run : runs) run(t);
}

/// Checks configurations [Begin, Begin + Count) and asserts agreement and coverage.
template <std::size_t Begin, std::size_t Count>
void run_part() {
  tally t;
  run_block<Begin>(std::make_index_sequence<Count>{}, t);
  INFO(t.first_mismatch);
  CHECK(t.mismatches == 0);
  CHECK(t.configs == Count);
  MESSAGE("sweep [" << Begin << ", " << Begin + Count << "): " << t.valid << " valid, " << t.rules_seen.size()
                    << " distinct rules fired");
  // A sweep that never reaches valid configs, or few rules, would prove little.
  CHECK(t.valid > 0);
  CHECK(t.rules_seen.size() >= 40);
}

}  // namespace sweep
