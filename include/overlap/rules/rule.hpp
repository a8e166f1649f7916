#pragma once
/// @file
/// The rule table as data: `overlap::rules::table`, one `rule` per row of table.inc, and the
/// conditions as named constexpr functions `overlap::rules::conditions::<ID>(s, r)`.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <overlap/rules/facts.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::rules {

/// Kinds of the rule catalogue (docs/rules.md): E (on option types or on settings), N, D, N/A, and "—" (a remark).
enum class kind : std::uint8_t { option_error, error, note, derivation, not_applicable, remark };

constexpr bool is_error(kind k) { return k == kind::option_error || k == kind::error; }

/// The catalogue's spelling of a kind.
constexpr std::string_view to_string(kind k) {
  switch (k) {
    case kind::option_error:
    case kind::error: return "E";
    case kind::note: return "N";
    case kind::derivation: return "D";
    case kind::not_applicable: return "N/A";
    case kind::remark: return "—";
  }
  return "?";
}

using condition = bool (*)(const settings&, const resolved_settings&);

/// What upstream (Megatron-Bridge over Megatron-Core and Transformer Engine) does where an E rule
/// fires: the "upstream" column of docs/rules.md. `enforces`: it raises (ERROR),
/// or the rule is a limit of this project; `turns_off`: it switches the feature off and runs
/// (AUTO-OFF); `ignores`: the flag has no effect and the run goes on (WARN, or nothing at all);
/// `unchecked`: only Megatron-LM's own launcher raises (its validate_args, which Bridge does not
/// run), and Bridge and Megatron-Core run the config as written. A config type fails to compile on
/// every E rule alike; reading an upstream dump, only `enforces` stops the run that upstream would
/// start.
enum class upstream : std::uint8_t { enforces, turns_off, ignores, unchecked };

constexpr std::string_view to_string(upstream u) {
  switch (u) {
    case upstream::enforces: return "enforces";
    case upstream::turns_off: return "turns off";
    case upstream::ignores: return "ignores";
    case upstream::unchecked: return "does not check";
  }
  return "?";
}

using upstream_rule = upstream (*)(const settings&);
/// Makes a settings value what upstream runs in its place.
using upstream_action = void (*)(settings&, const resolved_settings&);

/// One row of the table. `text` is the whole diagnostic, "[ID] what is wrong; how to fix".
struct rule {
  std::string_view id;
  overlap::rules::kind kind;
  std::string_view text;
  condition applies = nullptr;  ///< E and N rules: true when the rule fires
  /// E rules upstream lets run: what it does then (null: upstream enforces the rule).
  upstream_rule upstream_of = nullptr;
  std::string_view upstream_does{};            ///< ... in words
  upstream_action as_upstream_runs = nullptr;  ///< ... to the settings

  /// The text after "[ID] ".
  constexpr std::string_view message() const { return text.substr(id.size() + 3); }
  /// What upstream does with `s` where this E rule fires.
  constexpr upstream upstream_for(const settings& s) const { return upstream_of ? upstream_of(s) : upstream::enforces; }
};

namespace detail {
constexpr rule make_rule(std::string_view text, kind k, condition c = nullptr, upstream_rule u = nullptr,
                         std::string_view does = {}, upstream_action a = nullptr) {
  return rule{text.substr(1, text.find(']') - 1), k, text, c, u, does, a};
}
}  // namespace detail

/// The conditions of the E and N rules, one function per rule named after its id.
namespace conditions {

#define OVERLAP_CONDITION(name, text, ...)                                                               \
  constexpr bool name([[maybe_unused]] const settings& s, [[maybe_unused]] const resolved_settings& r) { \
    return __VA_ARGS__;                                                                                  \
  }
#define OVERLAP_OPTION_ERROR OVERLAP_CONDITION
#define OVERLAP_ERROR OVERLAP_CONDITION
#define OVERLAP_ERROR_UPSTREAM_RUNS(name, how, does, as_run, text, ...)                  \
  OVERLAP_CONDITION(name, text, __VA_ARGS__)                                             \
  constexpr upstream name##_upstream([[maybe_unused]] const settings& s) { return how; } \
  constexpr void name##_as_run([[maybe_unused]] settings& s, [[maybe_unused]] const resolved_settings& r) as_run
#define OVERLAP_NOTE OVERLAP_CONDITION
#define OVERLAP_DERIVATION(name, text)
#define OVERLAP_NOT_APPLICABLE(name, text)
#define OVERLAP_REMARK(name, text)
#include <overlap/rules/table.inc>
#undef OVERLAP_CONDITION
}  // namespace conditions

/// Every rule, in table order.
inline constexpr rule table[] = {
#define OVERLAP_OPTION_ERROR(name, text, ...) detail::make_rule(text, kind::option_error, &conditions::name),
#define OVERLAP_ERROR(name, text, ...) detail::make_rule(text, kind::error, &conditions::name),
#define OVERLAP_ERROR_UPSTREAM_RUNS(name, how, does, as_run, text, ...)                       \
  detail::make_rule(text, kind::error, &conditions::name, &conditions::name##_upstream, does, \
                    &conditions::name##_as_run),
#define OVERLAP_NOTE(name, text, ...) detail::make_rule(text, kind::note, &conditions::name),
#define OVERLAP_DERIVATION(name, text) detail::make_rule(text, kind::derivation),
#define OVERLAP_NOT_APPLICABLE(name, text) detail::make_rule(text, kind::not_applicable),
#define OVERLAP_REMARK(name, text) detail::make_rule(text, kind::remark),
#include <overlap/rules/table.inc>
};

inline constexpr std::size_t table_size = sizeof(table) / sizeof(table[0]);

/// The row with this id; the id must exist (a constant-evaluated miss does not compile).
constexpr const rule& find(std::string_view id) {
  for (const rule& x : table)
    if (x.id == id) return x;
  throw "overlap::rules::find: no rule with this id";
}

}  // namespace overlap::rules
