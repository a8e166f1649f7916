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
    if (x.kind == rules::kind::option_error && x.applies(s, resolved_settings{})) out.add_violation(x);
  if (!out.ok()) return out;
  const resolved_settings r = derive(s);
  for (const rules::rule& x : rules::table) {
    if (x.kind == rules::kind::error && x.applies(s, r)) out.add_violation(x);
    if (x.kind == rules::kind::note && x.applies(s, r)) out.notes.push_back(x);
  }
  if (out.ok()) out.resolved = r;
  return out;
}

/// `validate(s)` less the rules upstream does not check (rules::upstream::unchecked: Megatron-LM's
/// launcher alone refuses them, Bridge runs them as written): what stops a run of `s`. `resolved`
/// is engaged when nothing does. The step generators and the tuner build every such `s`.
constexpr report validate_runnable(const settings& s) {
  const report all = validate(s);
  report out;
  out.notes = all.notes;
  for (const diagnostic& d : all)
    if (const rules::rule& x = rules::find(d.id); x.upstream_for(s) != rules::upstream::unchecked) out.add_violation(x);
  if (out.ok()) out.resolved = all.resolved ? all.resolved : derive(s);
  return out;
}

}  // namespace overlap
