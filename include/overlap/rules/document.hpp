#pragma once
/// @file
/// Writes the rule table as a Markdown page (docs/rules.md is this output, checked in; a test
/// fails when it is stale). Regenerate with `cmake --build <dir> --target rule_doc`.

#include <ostream>
#include <string_view>

#include <overlap/rules/rule.hpp>

namespace overlap::rules {

namespace detail {
/// Markdown would read `<N>` as an HTML tag.
inline void write_escaped(std::ostream& os, std::string_view text) {
  for (const char c : text) {
    if (c == '<')
      os << "&lt;";
    else if (c == '>')
      os << "&gt;";
    else if (c == '|')
      os << "\\|";
    else
      os << c;
  }
}
}  // namespace detail

inline void write_rule_document(std::ostream& os) {
  os << "# Rules\n\n"
        "Generated from `include/overlap/rules/table.inc` by the `rule_doc` tool; do not edit.\n"
        "Kinds: E = compile error (and a violation in `check`/`validate`), N = note in "
        "`cfg::notes`, D = derivation into `cfg::resolved`, N/A = upstream rule with no meaning "
        "in a C++ trainer, — = a definition, or a rule always caught by another.\n"
        "Upstream, for E rules: what Megatron-Bridge (over Megatron-Core and Transformer Engine) "
        "does where the rule fires (stops: it raises an error, or the config is beyond what this "
        "project models; runs: it goes on as said); `overlap-plan` reads a dump the same way (an error where "
        "upstream stops, else a warning, or a note on upstream's defaults).\n\n"
        "| id | kind | rule | upstream |\n|---|---|---|---|\n";
  for (const rule& x : table) {
    os << "| " << x.id << " | " << to_string(x.kind) << " | ";
    detail::write_escaped(os, x.message());
    os << " | ";
    if (x.upstream_of) {
      os << "runs: ";
      detail::write_escaped(os, x.upstream_does);
    } else if (is_error(x.kind)) {
      os << "stops";
    }
    os << " |\n";
  }
}

}  // namespace overlap::rules
