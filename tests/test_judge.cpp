// plan/judge.hpp: rule violations judged by upstream's severity, on values.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <overlap/plan/judge.hpp>
#include <overlap/rules/upstream.hpp>
#include <overlap/settings/reflect_settings.hpp>

namespace {

namespace ov = overlap;
using ov::plan::severity;

/// A config that writes every field at "model.<field>", holds upstream's default where `defaults`
/// says, and spells a change as "<field>".
struct fake_source final : ov::plan::config_source {
  std::set<std::string> defaults, absent;
  std::optional<std::string> written_at(std::string_view field) const override {
    if (absent.count(std::string(field))) return std::nullopt;
    return "model." + std::string(field);
  }
  bool holds_upstream_default(std::string_view field) const override { return defaults.count(std::string(field)) > 0; }
  std::vector<std::string> changes_between(const ov::settings& from, const ov::settings& to) const override {
    std::vector<std::string> out;
    ov::reflect::for_each_field_pair(from, to, [&](std::string_view field, const auto& a, const auto& b) {
      if (!(a == b)) out.emplace_back(field);
    });
    return out;
  }
};

ov::settings tp_overlap_without_sequence_parallel() {
  ov::settings s{};
  s.tensor_model_parallel_size = 2;
  s.tp_comm_overlap = true;
  s.sequence_parallel = false;
  return s;
}

ov::settings ep_overlap_with_allgather() {
  ov::settings s{};
  s.num_moe_experts = 8;
  s.expert_model_parallel_size = 2;
  s.overlap_moe_expert_parallel_comm = true;
  return s;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

const ov::plan::rule_finding& finding(const ov::plan::judgement& j, std::string_view id) {
  const auto it = std::find_if(j.findings.begin(), j.findings.end(), [&](const auto& f) { return f.rule->id == id; });
  REQUIRE(it != j.findings.end());
  return *it;
}

}  // namespace

TEST_CASE("judge: a rule upstream lets run on a value somebody set is a warning, with its fields and fixes") {
  const ov::settings s = tp_overlap_without_sequence_parallel();
  const fake_source source;
  const ov::plan::judgement j = ov::plan::judge(s, ov::read_as_upstream(s), source, /*with_fixes=*/true);
  const ov::plan::rule_finding& f = finding(j, "TP-2");
  CHECK(f.level == severity::warning);
  CHECK(f.upstream == ov::rules::upstream::turns_off);
  CHECK(has(f.fields, "model.tp_comm_overlap"));
  CHECK(has(f.fields, "model.sequence_parallel"));  // the field its fix touches
  CHECK(f.defaults.empty());
  CHECK(has(f.fixes, "sequence_parallel"));
  CHECK(has(f.fixes, "tp_comm_overlap"));
  CHECK(j.count(severity::error) == 0);
  CHECK_FALSE(j.stops(/*strict=*/false));
  CHECK(j.stops(/*strict=*/true));
}

TEST_CASE("judge: the same on upstream's default is a note, without fixes none are worked out") {
  const ov::settings s = tp_overlap_without_sequence_parallel();
  fake_source source;
  source.defaults = {"tp_comm_overlap"};
  const ov::plan::judgement j = ov::plan::judge(s, ov::read_as_upstream(s), source, /*with_fixes=*/false);
  const ov::plan::rule_finding& f = finding(j, "TP-2");
  CHECK(f.level == severity::note);
  CHECK(f.defaults == std::set<std::string>{"model.tp_comm_overlap"});
  CHECK(f.fixes.empty());
  CHECK_FALSE(j.stops(/*strict=*/true));
}

TEST_CASE("judge: a rule upstream enforces is an error that stops the run, fixed on the settings upstream runs") {
  const ov::settings s = ep_overlap_with_allgather();
  fake_source source;
  source.absent = {"moe_token_dispatcher_type"};  // a fix's field the config does not hold is not listed
  const ov::plan::judgement j = ov::plan::judge(s, ov::read_as_upstream(s), source, /*with_fixes=*/true);
  const ov::plan::rule_finding& f = finding(j, "EP-3");
  CHECK(f.level == severity::error);
  CHECK(f.as_diagnostic().id == "EP-3");
  CHECK(has(f.fixes, "moe_token_dispatcher_type"));
  CHECK(has(f.fields, "model.overlap_moe_expert_parallel_comm"));
  CHECK_FALSE(has(f.fields, "model.moe_token_dispatcher_type"));
  CHECK(j.stops(/*strict=*/false));
  // Errors come first, in the order of the report.
  CHECK(j.findings.front().level == severity::error);
}
