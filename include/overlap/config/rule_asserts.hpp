#pragma once
/// @file
/// One class template per E rule, holding that rule's static_assert with its message. Each rule has
/// its own template so that every compiler reports every violated rule (clang reports only the
/// first failing static_assert of one class template specialization). `Ok` is the rule's verdict;
/// a failing configuration passes its own `Pack`, so each one reports, while every passing one
/// shares the single `<true, void>` instantiation (cheap to compile).

#include <overlap/rules/rule.hpp>

namespace overlap::detail::rule_asserts {

#define OVERLAP_ASSERT(name, text, ...) \
  template <bool Ok, class Pack>        \
  struct name {                         \
    static_assert(Ok, text);            \
  };
#define OVERLAP_OPTION_ERROR OVERLAP_ASSERT
#define OVERLAP_ERROR OVERLAP_ASSERT
#define OVERLAP_ERROR_UPSTREAM_RUNS(name, how, does, as_run, text, ...) OVERLAP_ASSERT(name, text)
#define OVERLAP_NOTE(name, text, ...)
#define OVERLAP_DERIVATION(name, text)
#define OVERLAP_NOT_APPLICABLE(name, text)
#define OVERLAP_REMARK(name, text)
#include <overlap/rules/table.inc>
#undef OVERLAP_ASSERT

}  // namespace overlap::detail::rule_asserts
