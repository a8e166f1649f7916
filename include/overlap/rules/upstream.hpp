#pragma once
/// @file
/// `overlap::read_as_upstream(settings)`: a configuration as upstream runs it. A config type fails
/// to compile on every E rule; a config read from an upstream dump (a Megatron-Bridge
/// `ConfigContainer`) is judged as upstream judges it: the rules upstream enforces are errors,
/// while where upstream turns a feature off or ignores a flag (`rules::upstream`), the run goes
/// on without it. Not included by <overlap/overlap.hpp>: it names settings fields by reflection.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <overlap/rules/derive.hpp>
#include <overlap/rules/rule.hpp>
#include <overlap/rules/validate.hpp>
#include <overlap/settings/reflect_settings.hpp>

namespace overlap {

/// An E rule that fires and that upstream lets run.
struct upstream_finding {
  const rules::rule* rule = nullptr;
  rules::upstream what = rules::upstream::ignores;  ///< turns off, ignores, or does not check
  std::vector<std::string_view> changed;            ///< the settings fields upstream runs otherwise (none if unchecked)
};

struct upstream_reading {
  settings as_run;                        ///< the settings upstream runs
  std::vector<upstream_finding> lenient;  ///< in the order applied, then the rules upstream does not check
  report errors;                          ///< `validate_runnable(as_run)`: only rules upstream enforces

  bool runs() const { return errors.ok(); }
};

/// Applies, one at a time in table order, what upstream does for each E rule that fires and that
/// it lets run, until only rules it enforces or does not check fire (or none); those it does not
/// check stay as written and end the list of findings. A rule whose action would leave the
/// settings unchanged, or that fires again after its action, is a defect of the table: logic_error.
inline upstream_reading read_as_upstream(const settings& s) {
  upstream_reading out{s, {}, {}};
  for (;;) {
    const report rep = validate(out.as_run);
    const rules::rule* next = nullptr;
    for (const diagnostic& d : rep) {
      const rules::rule& x = rules::find(d.id);
      const rules::upstream u = x.upstream_for(out.as_run);
      if (u != rules::upstream::enforces && u != rules::upstream::unchecked) {
        next = &x;
        break;
      }
    }
    if (!next) {
      for (const diagnostic& d : rep)
        if (const rules::rule& x = rules::find(d.id); x.upstream_for(out.as_run) == rules::upstream::unchecked)
          out.lenient.push_back({&x, rules::upstream::unchecked, {}});
      out.errors = validate_runnable(out.as_run);
      return out;
    }
    for (const upstream_finding& f : out.lenient)
      if (f.rule == next)
        throw std::logic_error("overlap::read_as_upstream: rule " + std::string(next->id) +
                               " fires again after upstream's action");
    const settings before = out.as_run;
    next->as_upstream_runs(out.as_run, derive(before));
    upstream_finding f{next, next->upstream_for(before), reflect::changed_fields(before, out.as_run)};
    if (f.changed.empty())
      throw std::logic_error("overlap::read_as_upstream: upstream's action for rule " + std::string(next->id) +
                             " changes nothing");
    out.lenient.push_back(std::move(f));
  }
}

}  // namespace overlap
