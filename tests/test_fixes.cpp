// single_field_fixes(): the one-field changes that clear a violated rule and break no other.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

#include <overlap/rules/fixes.hpp>

#include "sweep.hpp"

namespace ov = overlap;

namespace {
std::vector<std::string_view> fields(const ov::rule_fixes& r) {
  std::vector<std::string_view> out;
  for (const ov::field_fix& f : r.fixes) out.push_back(f.field);
  return out;
}
std::vector<std::string_view> ids(const ov::report& r) {
  std::vector<std::string_view> out;
  for (const ov::diagnostic& d : r) out.push_back(d.id);
  return out;
}
}  // namespace

TEST_CASE("DP-9: turn grad-reduce overlap on, param-gather overlap off, or drop the distributed optimizer") {
  ov::settings s;
  s.data_parallel_size = 8;
  s.distributed_optimizer = true;
  s.overlap_grad_reduce = false;
  const ov::report rep = ov::validate(s);
  REQUIRE(ids(rep) == std::vector<std::string_view>{"DP-9"});
  const auto found = ov::single_field_fixes(s, ids(rep));
  REQUIRE(found.size() == 1);
  CHECK(fields(found[0]) ==
        std::vector<std::string_view>{"distributed_optimizer", "overlap_grad_reduce", "overlap_param_gather"});
  for (const ov::field_fix& f : found[0].fixes) CHECK_MESSAGE(ov::validate(f.result).ok(), f.field);
  CHECK(found[0].fixes[1].result.overlap_grad_reduce == true);
  CHECK(found[0].fixes[2].result.overlap_param_gather == false);
}

TEST_CASE("over the sweep: a fix clears its rule, changes one field and makes no rule fire that did not") {
  for (std::size_t i = 0; i < 600; ++i) {
    const ov::settings s = sweep::settings_of(i);
    const ov::report rep = ov::validate(s);
    if (rep.ok() || rep.violates("OPT-3")) continue;
    std::set<std::string_view> before;
    for (const ov::diagnostic& d : rep) before.insert(d.id);
    for (const ov::rule_fixes& r : ov::single_field_fixes(s, ids(rep)))
      for (const ov::field_fix& f : r.fixes) {
        CHECK(ov::reflect::changed_fields(s, f.result) == std::vector<std::string_view>{f.field});
        const ov::report after = ov::validate(f.result);
        CHECK_FALSE(after.violates(r.id));
        for (const ov::diagnostic& d : after) CHECK_MESSAGE(before.count(d.id), d.id, " at ", i);
      }
  }
}
