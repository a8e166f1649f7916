// The workload describes the model: grouped-query attention, the vocabulary and a shared
// embedding change flops and parameters as the formulas say (numbers computed by hand below);
// activation recompute adds the forward ops it repeats, where it repeats them; the op types a
// config's programs contain are known from its type.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

#include "step_checks.hpp"

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
using test_queries::find;
using test_queries::index_of;
using test_queries::reduced_bytes;
using test_queries::small_gqa;

std::size_t count(const sc::program& p, bool (*pred)(const sc::op&)) {
  std::size_t n = 0;
  for (const auto& o : p.ops) n += pred(o);
  return n;
}

using dp2 = ov::config<ov::dp<2>, ov::overlap_grad_reduce<>, ov::precision<ov::dtype::bf16>>;
}  // namespace

TEST_CASE("grouped-query attention shrinks the QKV GEMM as the formula says") {
  sc::workload w = small_gqa();
  const auto step = dp2::schedule::generate(w);
  // qkv: h x (a d + 2 g d) = 256 x (4 x 64 + 2 x 2 x 64) = 131,072 weights; 2 flops per weight
  // and token, 128 tokens.
  CHECK(find(step[0], {.type = sc::op_type::qkv_fprop, .at = {.layer = 0, .micro_batch = 0}}).flops ==
        doctest::Approx(2.0 * 128 * 131'072));
  w.num_query_groups = 0;  // multi-head attention: 256 x 768
  const auto mha = dp2::schedule::generate(w);
  CHECK(find(mha[0], {.type = sc::op_type::qkv_fprop, .at = {.layer = 0, .micro_batch = 0}}).flops ==
        doctest::Approx(2.0 * 128 * 196'608));
  // Core attention: 2 x tokens x seq x a d (causal) = 2 x 128 x 128 x 256, for either.
  CHECK(find(step[0], {.type = sc::op_type::attn_core_fprop, .at = {.layer = 1, .micro_batch = 1}}).flops ==
        doctest::Approx(2.0 * 128 * 128 * 256));
}

TEST_CASE("the vocabulary and a shared embedding change the output layer and the reduced parameters") {
  sc::workload w = small_gqa();
  const auto step = dp2::schedule::generate(w);
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  // The output layer: 2 x tokens x vocabulary x h.
  CHECK(find(step[0], {.type = sc::op_type::lm_head_fprop, .at = {.micro_batch = 0}}).flops ==
        doctest::Approx(2.0 * 128 * 1000 * 256));
  // Per layer: two norms (2 x 256), qkv 131,072, proj 65,536, fc1 262,144, fc2 131,072 =
  // 590,336; two layers 1,180,672; embedding and output layer 256,000 each; final norm 256:
  // 1,692,928 parameters, reduced in bf16.
  CHECK(reduced_bytes(step[0]) == 2 * 1'692'928);
  w.share_embeddings_and_output_weights = true;  // one pipeline stage: one tensor for both
  CHECK(reduced_bytes(dp2::schedule::generate(w)[0]) == 2 * (1'692'928 - 256'000));
  w.vocab_size = 2000;
  CHECK(reduced_bytes(dp2::schedule::generate(w)[0]) == 2 * (1'692'928 - 256'000 + 256'000));
}

TEST_CASE("a shared embedding over a pipeline all-reduces its gradient between the first and last stage") {
  using pp2 = ov::config<ov::pp<2>, ov::dp<2>, ov::precision<ov::dtype::bf16>>;
  sc::workload w = small_gqa();
  w.share_embeddings_and_output_weights = true;
  const auto step = pp2::schedule::generate(w);
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  for (const auto& p : step) {
    const std::size_t n =
        count(p, [](const sc::op& o) { return o.key.type == sc::op_type::embedding_grad_all_reduce; });
    CHECK(n == 1);
    CHECK(find(p, {.type = sc::op_type::embedding_grad_all_reduce}).bytes == 2 * 256'000);
  }
}

TEST_CASE("full recompute repeats the forwards of each group right before the group's backward") {
  using uniform =
      ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>, ov::recompute_granularity<ov::granularity::full>,
                 ov::recompute_method<ov::recompute::uniform>, ov::recompute_num_layers<2>>;
  using block = ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>, ov::recompute_granularity<ov::granularity::full>,
                           ov::recompute_method<ov::recompute::block>, ov::recompute_num_layers<1>>;
  sc::workload w = small_gqa();
  w.num_layers = 4;
  const auto none = dp2::schedule::generate(w);
  const auto all = uniform::schedule::generate(w);
  const auto first = block::schedule::generate(w);
  INFO(ov::verify::verify_report(all));
  CHECK(ov::verify::verify(all).empty());
  CHECK(ov::verify::verify(first).empty());
  const auto recomputed = [](const sc::op& o) { return o.key.recompute; };
  CHECK(count(none[0], recomputed) == 0);
  // A dense layer's forward is five ops here (qkv, core, proj, fc1, fc2): uniform repeats all
  // 4 layers for both micro-batches, block only the first layer.
  CHECK(count(all[0], recomputed) == 5 * 4 * 2);
  CHECK(count(first[0], recomputed) == 5 * 1 * 2);
  // Group {2, 3} is repeated after the output layer's backward and before layer 3's backward.
  const sc::program& p = all[0];
  const std::size_t repeat =
      index_of(p, {.type = sc::op_type::qkv_fprop, .at = {.layer = 2, .micro_batch = 0}, .recompute = true});
  CHECK(index_of(p, {.type = sc::op_type::lm_head_bprop, .at = {.micro_batch = 0}}) < repeat);
  CHECK(repeat < index_of(p, {.type = sc::op_type::fc2_dgrad, .at = {.layer = 3, .micro_batch = 0}}));
  CHECK(index_of(p, {.type = sc::op_type::fc2_fprop, .at = {.layer = 3, .micro_batch = 0}, .recompute = true}) <
        index_of(p, {.type = sc::op_type::fc2_dgrad, .at = {.layer = 3, .micro_batch = 0}}));
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  CHECK(ov::sim::simulate(all, h100).compute_us > ov::sim::simulate(none, h100).compute_us);
}

TEST_CASE("selective recompute repeats core attention before its backward") {
  using selective =
      ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>, ov::recompute_granularity<ov::granularity::selective>>;
  const auto step = selective::schedule::generate(small_gqa());
  CHECK(ov::verify::verify(step).empty());
  const sc::program& p = step[0];
  CHECK(count(p, [](const sc::op& o) { return o.key.recompute; }) == 2 * 2);  // layers x micro-batches
  const sc::op_key again{.type = sc::op_type::attn_core_fprop, .at = {.layer = 1, .micro_batch = 1}, .recompute = true};
  CHECK(index_of(p, again) < index_of(p, {.type = sc::op_type::attn_core_bprop, .at = {.layer = 1, .micro_batch = 1}}));
  using not_modelled = ov::config<ov::dp<2>, ov::recompute_granularity<ov::granularity::selective>,
                                  ov::recompute_modules<ov::module::mla_up_proj>>;
  CHECK_THROWS_WITH_AS(not_modelled::schedule::generate(small_gqa()),
                       doctest::Contains("the workload has no multi_latent_attention"), std::invalid_argument);
}

TEST_CASE("selective recompute of the norms, the experts' activation and the shared experts, in bytes and flops") {
  // small_gqa: 128 tokens, h 256, bf16, tp 1. A recomputed norm reads its input and writes its
  // output again inside the backward of the GEMM that reads it (TE's LayerNormLinear): 2 x 128 x
  // 256 x 2 bytes = 131,072 more on qkv_dgrad and fc1_dgrad.
  ov::settings s;
  s.data_parallel_size = 2;
  s.precision = ov::dtype::bf16;
  s.recompute_granularity = ov::granularity::selective;
  s.recompute_modules.insert(ov::module::core_attn);
  const auto bytes_of = [](const ov::settings& x, const sc::workload& w, sc::op_type type) {
    const auto step = sc::compose_step(x, ov::derive(x), w);
    CHECK(ov::verify::verify(step).empty());
    return find(step[0], {.type = type, .at = {.layer = 1, .micro_batch = 0}}).memory_bytes;
  };
  ov::settings norms = s;
  norms.recompute_modules.insert(ov::module::layernorm);
  for (const sc::op_type t : {sc::op_type::qkv_dgrad, sc::op_type::fc1_dgrad})
    CHECK(bytes_of(norms, small_gqa(), t) - bytes_of(s, small_gqa(), t) == 131'072);
  // MoE: 4 experts, top-2, expert ffn 128, shared experts of 64. The norm before the router is
  // recomputed inside the router's backward (131,072 bytes again); the routed SwiGLU inside the
  // experts' dgrad: 128 tokens x 2 x (read 2 x 128 + write 128) x 2 bytes = 196,608.
  sc::workload w = small_gqa();
  w.moe_router_topk = 2;
  w.moe_ffn_hidden_size = 128;
  ov::settings moe = s;
  moe.num_moe_experts = 4;
  moe.moe_shared_expert_intermediate_size = 64;
  moe.moe_token_dispatcher_type = ov::dispatcher::alltoall;
  ov::settings moe_norms = moe;
  moe_norms.recompute_modules.insert(ov::module::layernorm);
  CHECK(bytes_of(moe_norms, w, sc::op_type::router_bprop) - bytes_of(moe, w, sc::op_type::router_bprop) == 131'072);
  ov::settings act = moe;
  act.recompute_modules.insert(ov::module::moe_act);
  CHECK(bytes_of(moe, w, sc::op_type::experts_dgrad) == 0);
  CHECK(bytes_of(act, w, sc::op_type::experts_dgrad) == 196'608);
  // The shared experts' forward again before their backward: 2 x 128 x (3 x 256 x 64) flops.
  ov::settings shared = moe;
  shared.recompute_modules.insert(ov::module::shared_experts);
  const auto step = sc::compose_step(shared, ov::derive(shared), w);
  CHECK(ov::verify::verify(step).empty());
  const sc::op_key again{
      .type = sc::op_type::shared_experts_fprop, .at = {.layer = 1, .micro_batch = 0}, .recompute = true};
  CHECK(find(step[0], again).flops == doctest::Approx(2.0 * 128 * 3 * 256 * 64));
  CHECK(index_of(step[0], again) <
        index_of(step[0], {.type = sc::op_type::shared_experts_dgrad, .at = {.layer = 1, .micro_batch = 0}}));
}

TEST_CASE("the op types a config's programs contain are known from its type") {
  using dense = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<2>, ov::distributed_optimizer<>>;
  constexpr sc::op_type_set types = dense::schedule::op_types;
  static_assert(types.contains(sc::op_type::fc1_fprop) && types.contains(sc::op_type::tp_all_gather));
  static_assert(types.contains(sc::op_type::dp_param_gather));
  static_assert(!types.contains(sc::op_type::experts_fprop) && !types.contains(sc::op_type::pp_send_forward));
  static_assert(!types.contains(sc::op_type::tp_ring_send));  // TP overlap off: no ring exchange
  for (const auto& p : dense::schedule::generate(small_gqa()))
    for (const auto& o : p.ops) {
      CAPTURE(sc::display_name(o));
      CHECK(types.contains(o.key.type));
    }
}

TEST_CASE("a workload that disagrees with the settings is refused, every problem named") {
  sc::workload w = small_gqa();
  w.moe_router_topk = 2;      // MoE sizes on a dense config
  w.num_attention_heads = 3;  // and heads that neither tp nor the query groups divide
  using tp2 = ov::config<ov::tp<2>, ov::sequence_parallel<>>;
  CHECK_THROWS_WITH_AS(tp2::schedule::generate(w), doctest::Contains("num_moe_experts is not"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tp2::schedule::generate(w), doctest::Contains("multiples of tp"), std::invalid_argument);
  using moe =
      ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<8>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>>;
  w = small_gqa();
  w.moe_router_topk = 9;
  w.moe_ffn_hidden_size = 128;
  CHECK_THROWS_WITH_AS(moe::schedule::generate(w),
                       doctest::Contains("moe_router_topk (9) must be in 1..num_moe_experts (8)"),
                       std::invalid_argument);
}

TEST_CASE("sizes far beyond what the planner was made for are named with their bound") {
  sc::workload w;
  CHECK(sc::beyond_planned(w).empty());
  w.seq_length = 2'000'000'000;
  w.hidden_size = 1 << 17;
  const auto lines = sc::beyond_planned(w);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].find("seq_length = 2000000000 is far beyond what the planner was made for (at most 1048576)") == 0);
  CHECK(lines[1].find("hidden_size = 131072") == 0);
  w = {};
  w.seq_length = 1 << 20;  // the bound itself is within
  CHECK(sc::beyond_planned(w).empty());
}
