// check<...>(), validate() and report: the API a tool or a dynamic config uses.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include <overlap/overlap.hpp>

namespace ov = overlap;

namespace {
using moe_options_valid =
    ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
               ov::precision<ov::dtype::bf16>, ov::overlap_moe_expert_parallel_comm<>>;
}  // namespace

TEST_CASE("a valid configuration: no violation, resolved engaged") {
  constexpr ov::report r =
      ov::check<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                ov::precision<ov::dtype::bf16>, ov::overlap_moe_expert_parallel_comm<>>();
  static_assert(r.ok());
  CHECK(r.count() == 0);
  REQUIRE(r.resolved.has_value());
  CHECK(r.resolved->overlap_moe_expert_parallel_comm);
  CHECK(*r.resolved == moe_options_valid::resolved);
}

TEST_CASE("an invalid configuration: every violated rule, in table order, no resolved") {
  constexpr ov::report r = ov::check<ov::tp<4>, ov::pp<4>, ov::dp<8>, ov::ep<16>, ov::etp<1>, ov::num_moe_experts<128>,
                                     ov::tp_comm_overlap<>, ov::overlap_moe_expert_parallel_comm<>>();
  static_assert(r.violates("EP-3"));
  CHECK(r.count() == 4);
  std::string ids;
  for (const ov::diagnostic& d : r) ids += std::string(d.id) + " ";
  CHECK(ids == "TP-2 EP-3 EP-4 EP-6 ");
  CHECK_FALSE(r.violates("EP-1"));
  CHECK_FALSE(r.resolved.has_value());
  std::ostringstream os;
  os << *r.begin();
  CHECK(os.str().rfind("[TP-2] tp_comm_overlap needs sequence_parallel", 0) == 0);
}

TEST_CASE("validate() reports the same as check<...>() for the same settings") {
  ov::settings s;
  s.tensor_model_parallel_size = 2;
  s.tp_comm_overlap = true;
  const ov::report r = ov::validate(s);
  CHECK(r.count() == 1);
  CHECK(r.violates("TP-2"));
  s.sequence_parallel = true;
  CHECK(ov::validate(s).ok());
}

TEST_CASE("option rules: duplicates, foreign types and out-of-domain values") {
  constexpr auto duplicate = ov::check<ov::tp<2>, ov::tensor_model_parallel_size<2>>();
  CHECK(duplicate.count() == 1);
  CHECK(duplicate.violates("OPT-1"));
  constexpr auto foreign = ov::check<ov::tp<2>, int>();
  CHECK(foreign.count() == 1);
  CHECK(foreign.violates("OPT-2"));
  constexpr auto both = ov::check<ov::dp<0>, ov::dp<2>, ov::tp<2>, ov::tp_comm_overlap<>>();
  CHECK(both.count() == 2);  // OPT-1 and OPT-3; TP-2 is not judged on undefined settings
  CHECK(both.violates("OPT-1"));
  CHECK(both.violates("OPT-3"));
  CHECK_FALSE(both.violates("TP-2"));
  CHECK(ov::check<ov::vpp<1>, ov::pp<2>>().violates("OPT-3"));
}

TEST_CASE("validate() on out-of-domain run-time values reports only OPT-3") {
  ov::settings s;
  s.data_parallel_size = -3;
  s.tp_comm_overlap = true;  // would be TP-1 on sound settings
  const ov::report r = ov::validate(s);
  CHECK(r.count() == 1);
  CHECK(r.violates("OPT-3"));
  s = ov::settings{};
  s.moe_token_dispatcher_type = static_cast<ov::dispatcher>(7);
  CHECK(ov::validate(s).violates("OPT-3"));
  s = ov::settings{};
  s.recompute_modules.bits = 1u << 20;
  CHECK(ov::validate(s).violates("OPT-3"));
}

TEST_CASE("cfg::settings holds the user's values, short and long names are one field") {
  using short_names = ov::config<ov::tp<2>, ov::pp<2>, ov::dp<4>, ov::sequence_parallel<>>;
  using long_names = ov::config<ov::tensor_model_parallel_size<2>, ov::pipeline_model_parallel_size<2>,
                                ov::data_parallel_size<4>, ov::sequence_parallel<true>>;
  static_assert(short_names::settings == long_names::settings);
  CHECK(short_names::settings.tensor_model_parallel_size == 2);
  CHECK_FALSE(short_names::settings.virtual_pipeline_model_parallel_size.has_value());
  CHECK_FALSE(short_names::settings.tp_comm_overlap.has_value());
  CHECK(short_names::settings.add_bias_linear);  // upstream default when absent
  using explicit_false = ov::config<ov::tp<2>, ov::overlap_grad_reduce<false>>;
  CHECK(explicit_false::settings.overlap_grad_reduce == false);
}

TEST_CASE("option order does not matter") {
  using a = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::dp<2>>;
  using b = ov::config<ov::dp<2>, ov::tp_comm_overlap<>, ov::tp<2>, ov::sequence_parallel<>>;
  static_assert(a::settings == b::settings);
  static_assert(a::resolved == b::resolved);
}

TEST_CASE("every rule's text has the one message format") {
  for (const ov::rules::rule& x : ov::rules::table) {
    CAPTURE(x.id);
    // Piecewise, on string_views: building "[" + id + "] " as a std::string trips g++ 12's bogus
    // -Wrestrict inside basic_string at -O2 and above (GCC PR 105329).
    CHECK(x.text.starts_with('['));
    CHECK(x.text.substr(1).starts_with(x.id));
    CHECK(x.text.substr(1 + x.id.size()).starts_with("] "));
    if (ov::rules::is_error(x.kind)) CHECK(x.message().find("; ") != std::string_view::npos);
  }
}
