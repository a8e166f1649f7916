#pragma once
/// @file
/// `config<Options...>`: the run as a type. Instantiating it (any use of `settings`, `resolved` or
/// `notes`, or an explicit instantiation) checks every rule; each violated rule is one compile
/// error "[ID] what is wrong; how to fix". `check<Options...>()` gives the same verdict as a value.

#include <array>
#include <cstddef>
#include <type_traits>

#include <overlap/config/option_pack.hpp>
#include <overlap/config/rule_asserts.hpp>
#include <overlap/rules/report.hpp>
#include <overlap/rules/rule.hpp>
#include <overlap/rules/validate.hpp>

namespace overlap {

namespace detail {

/// The notes (N rules) that apply to resolved settings, as an array of the exact size.
template <class Pack>
constexpr auto notes_of() {
  constexpr report checked = validate(Pack::value);
  std::array<diagnostic, checked.notes.size()> out{};
  for (std::size_t i = 0; i != out.size(); ++i) out[i] = checked.notes[i];
  return out;
}

}  // namespace detail

}  // namespace overlap

namespace overlap::schedule {
/// The step schedule of a config type (defined in <overlap/schedule/step.hpp>).
template <class Cfg>
struct step_schedule;
}  // namespace overlap::schedule

namespace overlap {

/// A training run's overlap configuration. Options are order-free; the README lists them.
template <class... Options>
struct config {
 private:
  using pack = detail::option_pack<Options...>;

 public:
  /// What the user set (upstream defaults for absent options).
  static constexpr overlap::settings settings = pack::value;
  /// Every upstream output field after derivation, and the environment to set.
  static constexpr resolved_settings resolved = pack::resolved;
  /// Advice (N rules) for this configuration: elements with `id` and `message`.
  static constexpr auto notes = detail::notes_of<pack>();
  /// The step schedule: one component per enabled family; `schedule::generate(workload)` gives
  /// the programs of every rank (include <overlap/schedule/step.hpp>).
  using schedule = overlap::schedule::step_schedule<config>;

 private:
  // Option rules are judged on the types; the other rules only once the options are sound.
  template <bool Ok>
  using failing = std::conditional_t<Ok, void, pack>;
  static_assert(sizeof(detail::rule_asserts::OPT_1<pack::unique_fields, failing<pack::unique_fields>>));
  static_assert(sizeof(detail::rule_asserts::OPT_2<pack::all_options, failing<pack::all_options>>));
  static_assert(sizeof(detail::rule_asserts::OPT_3<pack::all_in_domain, failing<pack::all_in_domain>>));
#define OVERLAP_ERROR(name, text, ...)                                                                          \
  static constexpr bool name##_ok = !pack::options_ok || !rules::conditions::name(pack::value, pack::resolved); \
  static_assert(sizeof(detail::rule_asserts::name<name##_ok, failing<name##_ok>>));
#define OVERLAP_ERROR_UPSTREAM_RUNS(name, how, does, as_run, text, ...) OVERLAP_ERROR(name, text, __VA_ARGS__)
#define OVERLAP_OPTION_ERROR(name, text, ...)
#define OVERLAP_NOTE(name, text, ...)
#define OVERLAP_DERIVATION(name, text)
#define OVERLAP_NOT_APPLICABLE(name, text)
#define OVERLAP_REMARK(name, text)
#include <overlap/rules/table.inc>
};

/// The verdict on `config<Options...>` as a constexpr value; never fires a static_assert.
template <class... Options>
constexpr report check() {
  using pack = detail::option_pack<Options...>;
  if constexpr (pack::options_ok) {
    return validate(pack::value);
  } else {
    report out;
    if (!pack::unique_fields) out.add_violation(rules::find("OPT-1"));
    if (!pack::all_options) out.add_violation(rules::find("OPT-2"));
    if (!pack::all_in_domain) out.add_violation(rules::find("OPT-3"));
    return out;
  }
}

}  // namespace overlap
