#pragma once
/// @file
/// `overlap::validate(settings)`: the rule table applied to a run-time value (a config read from
/// JSON, YAML or a command line). Same table, ids and messages as the compile-time checks.

#include <overlap/rules/derive.hpp>
#include <overlap/rules/report.hpp>
#include <overlap/rules/rule.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap {

/// Checks `s` against every rule. Defined for every value of `settings`: when an option rule
/// fires (a value outside its domain) only option rules are reported and nothing is derived.
constexpr report validate(const settings& s) {
  report out;
  for (const rules::rule& x : rules::table)
    if (x.kind == rules::kind::option_error && x.applies(s, resolved_settings{}))
      out.add_violation(x);
  if (!out.ok()) return out;
  const resolved_settings r = derive(s);
  for (const rules::rule& x : rules::table) {
    if (x.kind == rules::kind::error && x.applies(s, r)) out.add_violation(x);
    if (x.kind == rules::kind::note && x.applies(s, r)) out.notes.push_back(x);
  }
  if (out.ok()) out.resolved = r;
  return out;
}

}  // namespace overlap
