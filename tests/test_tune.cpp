// plan::tune: every overlap knob is searched, the ones a configuration sets too; rejected
// combinations are counted by rule id; the result does not depend on the threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/plan/tune.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
ov::settings moe_settings() {
  ov::settings s;
  s.tensor_model_parallel_size = 2;
  s.sequence_parallel = true;
  s.pipeline_model_parallel_size = 2;
  s.virtual_pipeline_model_parallel_size = 2;
  s.data_parallel_size = 2;
  s.expert_model_parallel_size = 2;
  s.expert_tensor_parallel_size = 1;
  s.num_moe_experts = 4;
  s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
  s.precision = ov::dtype::bf16;
  s.distributed_optimizer = true;
  return s;
}
sc::workload small_moe() {
  return {.num_layers = 4,
          .micro_batches = 4,
          .seq_length = 1024,
          .hidden_size = 1024,
          .ffn_hidden_size = 2048,
          .num_attention_heads = 8,
          .vocab_size = 32000,
          .moe_router_topk = 2,
          .moe_ffn_hidden_size = 512};
}
const ov::plan::knob* knob_named(const std::vector<ov::plan::knob>& knobs, const std::string& name) {
  for (const auto& k : knobs)
    if (k.name == name) return &k;
  return nullptr;
}
std::vector<std::string> labels(const ov::plan::knob& k) {
  std::vector<std::string> out;
  for (const auto& c : k.choices) out.push_back(c.label);
  return out;
}
}  // namespace

TEST_CASE("the knobs: each overlap knob the layout gives a meaning, the ones the config sets too") {
  ov::settings s = moe_settings();
  s.overlap_moe_expert_parallel_comm = true;  // set by the config: still searched
  const auto knobs = ov::plan::overlap_knobs(s);
  const ov::plan::knob* ep = knob_named(knobs, "EP overlap");
  REQUIRE(ep);
  CHECK(labels(*ep) ==
        std::vector<std::string>{"ep_overlap=on (as configured)", "ep_overlap=off", "ep_overlap=on+delay_wgrad"});
  for (const char* name : {"TP overlap", "overlap_grad_reduce", "bucket_size", "overlap_param_gather",
                           "CUDA_DEVICE_MAX_CONNECTIONS", "p2p"})
    CHECK_MESSAGE(knob_named(knobs, name) != nullptr, name);
  // Each choice but the first changes what the settings resolve to.
  for (const auto& k : knobs)
    for (std::size_t i = 1; i < k.choices.size(); ++i) {
      ov::settings x = s;
      k.choices[i].apply(x);
      CHECK_MESSAGE(!(ov::derive(x) == ov::derive(s)), k.choices[i].label);
    }
  // One GPU's worth of layout: no TP, DP, PP or EP knob.
  ov::settings one;
  const auto alone = ov::plan::overlap_knobs(one);
  REQUIRE(alone.size() == 1);
  CHECK(alone[0].name == "CUDA_DEVICE_MAX_CONNECTIONS");
}

TEST_CASE("tune: the configuration first, the best found ahead, rejections by rule, independent of threads") {
  const ov::sim::analytic_cost_model cost(ov::sim::h100_node());
  const ov::settings s = moe_settings();
  const ov::plan::tune_result one = ov::plan::tune(s, small_moe(), cost, 1);
  const ov::plan::tune_result two = ov::plan::tune(s, small_moe(), cost, 2);
  REQUIRE(!one.tried.empty());
  CHECK(one.configured().tried == s);
  CHECK(
      std::all_of(one.configured().picks.begin(), one.configured().picks.end(), [](std::size_t p) { return p == 0; }));
  CHECK(one.best().usable());
  CHECK(one.best().simulated.step_time_us <= one.configured().simulated.step_time_us);
  CHECK(ov::validate(one.best().tried).ok());
  std::size_t rejected = 0, by_rule = 0;
  for (const auto& c : one.tried) {
    rejected += !c.usable();
    by_rule += c.rules.size();
  }
  CHECK(rejected == one.rejected);
  std::size_t counted = 0;
  for (const auto& [why, n] : one.rejected_by) counted += why.starts_with("simulation: ") ? 0 : n;
  CHECK(counted == by_rule);
  // The same combinations, the same times, with one thread or two.
  REQUIRE(one.tried.size() == two.tried.size());
  for (std::size_t i = 0; i < one.tried.size(); ++i) {
    CHECK(one.tried[i].picks == two.tried[i].picks);
    CHECK(one.tried[i].simulated.step_time_us == two.tried[i].simulated.step_time_us);
  }
  CHECK(one.ranked == two.ranked);
  // A limit nothing fits in: ranked all the same, as without a limit, and said so.
  const ov::plan::tune_result tight = ov::plan::tune(s, small_moe(), cost, 1, {}, /*memory_limit=*/1);
  CHECK(one.none_fits_least_bytes == 0);
  std::int64_t least = one.configured().peak_bytes;
  for (const auto& c : one.tried)
    if (c.rules.empty() && !c.failed) least = std::min(least, c.peak_bytes);
  CHECK(tight.none_fits_least_bytes == least);
  CHECK(tight.best().picks == one.best().picks);
  CHECK(tight.best().simulated.step_time_us == one.best().simulated.step_time_us);
  CHECK(tight.ranked.size() >= one.ranked.size());
  CHECK(std::none_of(tight.tried.begin(), tight.tried.end(), [](const auto& c) { return c.too_big; }));
  // A configuration upstream refuses is refused, naming the rule.
  ov::settings bad = s;
  bad.num_buckets = 2;
  bad.bucket_size = 1000000;  // DP-12
  CHECK_THROWS_WITH_AS(ov::plan::tune(bad, small_moe(), cost, 1), doctest::Contains("[DP-12]"), std::invalid_argument);
  // One that only Megatron-LM's launcher refuses is tuned as Bridge runs it; the combinations
  // searched pass every rule, from the fastest neighbour that does.
  ov::settings unchecked = s;
  unchecked.overlap_grad_reduce = false;  // overlap_param_gather derived on: DP-9
  const ov::plan::tune_result from_dp9 = ov::plan::tune(unchecked, small_moe(), cost, 1);
  CHECK(from_dp9.configured().usable());
  CHECK(from_dp9.configured().tried == unchecked);
  std::size_t valid = 0;
  for (std::size_t i = 1; i < from_dp9.tried.size(); ++i) {
    CHECK((!from_dp9.tried[i].usable() || ov::validate(from_dp9.tried[i].tried).ok()));
    valid += from_dp9.tried[i].usable();
  }
  // Every knob searched: more than the neighbours that fix DP-9 alone.
  CHECK(valid > 2);
}
