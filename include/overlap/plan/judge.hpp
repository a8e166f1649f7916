#pragma once
/// @file
/// A config's rule violations judged as upstream judges them. A rule upstream enforces is an
/// error: upstream stops too. A rule upstream lets run (it turns a feature off, ignores a flag or
/// does not check) is a warning on a value somebody set, and a note on a value that is upstream's
/// default, which a dump holds whether anybody asked for it or not. Each finding names the config
/// fields behind it and, when asked, the single-field changes that clear it without breaking
/// another rule, written in the config's own terms (a Bridge override, for overlap-plan).
///
/// What judging needs of the config the settings came from is `config_source`: the reader of a
/// config format implements it.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <overlap/rules/fixes.hpp>
#include <overlap/rules/rule.hpp>
#include <overlap/rules/upstream.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::plan {

/// How a violated rule reads on a config: see the file comment.
enum class severity { error, warning, note };

constexpr std::string_view to_string(severity v) {
  return v == severity::error ? "error" : v == severity::warning ? "warning" : "note";
}

/// The config a `settings` value was read from, as judging asks about it.
class config_source {
 public:
  virtual ~config_source() = default;
  /// The place in the config (e.g. "model.sequence_parallel") of settings field `field`, where the
  /// config holds it; nothing where the field took its value from elsewhere or from no place.
  virtual std::optional<std::string> written_at(std::string_view field) const = 0;
  /// Whether the config holds upstream's default for settings field `field`.
  virtual bool holds_upstream_default(std::string_view field) const = 0;
  /// The changes to the config, one line each, that take settings `from` to `to`.
  virtual std::vector<std::string> changes_between(const settings& from, const settings& to) const = 0;
};

/// One violated rule, judged.
struct rule_finding {
  const rules::rule* rule = nullptr;
  severity level = severity::error;
  rules::upstream upstream = rules::upstream::enforces;  ///< what upstream does where it runs anyway
  std::vector<std::string> fields;  ///< config places behind it (what upstream runs otherwise first)
  std::set<std::string> defaults;   ///< those of `fields` that hold upstream's default
  std::vector<std::string> fixes;   ///< changes that clear it without breaking another rule, one line each

  diagnostic as_diagnostic() const { return {rule->id, rule->message()}; }
};

/// The config as upstream runs it, and its findings: errors, then the rules upstream let run in
/// the order it applied them.
struct judgement {
  upstream_reading upstream;
  std::vector<rule_finding> findings;

  std::size_t count(severity v) const {
    return static_cast<std::size_t>(
        std::count_if(findings.begin(), findings.end(), [&](const rule_finding& f) { return f.level == v; }));
  }
  /// Whether the run stops here: a rule upstream enforces, or with `strict` any warning.
  bool stops(bool strict) const { return count(severity::error) > 0 || (strict && count(severity::warning) > 0); }
};

namespace detail {

/// For each of `findings` (rules violated by `s`), the single-field changes that clear it and
/// break nothing else (overlap::single_field_fixes), in the source's terms, and the config places
/// they touch.
inline void find_fixes(const config_source& source, const settings& s, const std::vector<rule_finding*>& findings) {
  std::vector<std::string_view> ids;
  for (const rule_finding* f : findings) ids.push_back(f->rule->id);
  const std::vector<rule_fixes> found = single_field_fixes(s, ids);
  for (std::size_t i = 0; i < findings.size(); ++i)
    for (const field_fix& x : found[i].fixes) {
      std::string line;
      for (const std::string& change : source.changes_between(s, x.result)) (line += line.empty() ? "" : " ") += change;
      findings[i]->fixes.push_back(line);
      std::vector<std::string>& fields = findings[i]->fields;
      if (const std::optional<std::string> path = source.written_at(x.field);
          path && std::find(fields.begin(), fields.end(), *path) == fields.end())
        fields.push_back(*path);
    }
}

/// A rule upstream let run, judged: a warning where upstream does not check it (it changes
/// nothing, whatever the values behind it) or where a value it changed is not upstream's default;
/// else a note.
inline rule_finding judge_lenient(const upstream_finding& u, const config_source& source) {
  rule_finding f{u.rule, u.what == rules::upstream::unchecked ? severity::warning : severity::note, u.what, {}, {}, {}};
  for (const std::string_view field : u.changed) {
    const bool by_default = source.holds_upstream_default(field);
    if (!by_default) f.level = severity::warning;
    if (const std::optional<std::string> path = source.written_at(field)) {
      f.fields.push_back(*path);
      if (by_default) f.defaults.insert(*path);
    }
  }
  return f;
}

}  // namespace detail

/// `upstream` (the reading of `as_read`, the settings as the config gives them) judged, with the
/// config places of each finding and, `with_fixes`, the changes that fix it: errors on the
/// settings upstream runs, the rules it let run on the config as written.
inline judgement judge(const settings& as_read, const upstream_reading& upstream, const config_source& source,
                       bool with_fixes) {
  judgement out{upstream, {}};
  for (const diagnostic& d : out.upstream.errors)
    out.findings.push_back({&rules::find(d.id), severity::error, rules::upstream::enforces, {}, {}, {}});
  const std::size_t errors = out.findings.size();
  for (const upstream_finding& u : out.upstream.lenient) out.findings.push_back(detail::judge_lenient(u, source));
  if (!with_fixes) return out;
  std::vector<rule_finding*> enforced, lenient;
  for (std::size_t i = 0; i < out.findings.size(); ++i) (i < errors ? enforced : lenient).push_back(&out.findings[i]);
  detail::find_fixes(source, out.upstream.as_run, enforced);
  detail::find_fixes(source, as_read, lenient);
  return out;
}

}  // namespace overlap::plan
