// Multi-token-prediction layers (mtp_num_layers): where they run (after the model's layers on the
// last stage, before its output layer; their own output layer after it), their projection's
// shape, flops and bytes, the parameters they add to the data-parallel reduction, the gradient
// they add to the model's output, the op types a config with them binds, and a composed step with
// every family and EP overlap that verifies and simulates. Numbers computed by hand below.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

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

/// The small GQA model of step_checks.hpp.
const auto small = test_queries::small_gqa;

using plain = ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>>;
using mtp1 = ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>, ov::mtp_num_layers<1>>;
using mtp2 = ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>, ov::mtp_num_layers<2>>;
}  // namespace

TEST_CASE("an MTP layer runs after the model's layers, its output layer after the model's") {
  const auto step = mtp1::schedule::generate(small());
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const sc::program& p = step[0];
  // The model's layers are 0 and 1; MTP layer 0 is transformer layer 3, its projection writing
  // layer 3's input from the model's output (2).
  const sc::location mtp{.layer = 3, .micro_batch = 0}, head{.micro_batch = 0};
  const std::size_t proj = index_of(p, {.type = sc::op_type::mtp_proj_fprop, .at = mtp});
  CHECK(index_of(p, {.type = sc::op_type::fc2_fprop, .at = {.layer = 1, .micro_batch = 0}}) < proj);
  CHECK(proj < index_of(p, {.type = sc::op_type::qkv_fprop, .at = mtp}));
  CHECK(index_of(p, {.type = sc::op_type::fc2_fprop, .at = mtp}) <
        index_of(p, {.type = sc::op_type::lm_head_fprop, .at = head}));
  CHECK(index_of(p, {.type = sc::op_type::lm_head_fprop, .at = head}) <
        index_of(p, {.type = sc::op_type::lm_head_fprop, .at = mtp}));
  // eh_proj: 2 h to h over the micro-batch, 2 x 128 x 256 x 512 flops; with it the embedding
  // lookup, two norms and the concatenation: 10 x 128 x 256 elements in bf16.
  const sc::op& eh = find(p, {.type = sc::op_type::mtp_proj_fprop, .at = mtp});
  CHECK(eh.gemm == sc::gemm_shape{128, 256, 512});
  CHECK(eh.flops == doctest::Approx(2.0 * 128 * 256 * 512));
  CHECK(eh.memory_bytes == 2 * 10 * 128 * 256);
  // Its own output layer: the model's vocabulary GEMM again.
  CHECK(find(p, {.type = sc::op_type::lm_head_fprop, .at = mtp}).flops == doctest::Approx(2.0 * 128 * 1000 * 256));
  // Backward: the MTP layer's output layer, its layer, its projection, then the model's output
  // layer, whose norm backward adds to the gradient the projection wrote (it reads it).
  const std::size_t mtp_out = index_of(p, {.type = sc::op_type::lm_head_bprop, .at = mtp});
  const std::size_t mtp_layer = index_of(p, {.type = sc::op_type::qkv_dgrad, .at = mtp});
  const std::size_t eh_back = index_of(p, {.type = sc::op_type::mtp_proj_dgrad, .at = mtp});
  const std::size_t model_out = index_of(p, {.type = sc::op_type::lm_head_bprop, .at = head});
  CHECK(mtp_out < mtp_layer);
  CHECK(mtp_layer < eh_back);
  CHECK(eh_back < model_out);
  CHECK(model_out < index_of(p, {.type = sc::op_type::fc2_dgrad, .at = {.layer = 1, .micro_batch = 0}}));
  const sc::op& norm_back = find(p, {.type = sc::op_type::layernorm_bprop, .at = head});
  const int grad = p.ops[eh_back].writes[0];
  CHECK(std::find(norm_back.reads.begin(), norm_back.reads.end(), grad) != norm_back.reads.end());
  CHECK(find(p, {.type = sc::op_type::mtp_proj_wgrad, .at = mtp}).gemm == sc::gemm_shape{512, 256, 128});
}

TEST_CASE("MTP layers add their parameters to the reduction and their types to the schedule") {
  // Without MTP: 1,692,928 parameters (test_workload.cpp). An MTP layer adds eh_proj 2 x 256 x 256
  // = 131,072, its two norms 512, a transformer layer 590,336 and its final norm 256: 722,176.
  CHECK(reduced_bytes(plain::schedule::generate(small())[0]) == 2 * 1'692'928);
  CHECK(reduced_bytes(mtp1::schedule::generate(small())[0]) == 2 * (1'692'928 + 722'176));
  const auto two = mtp2::schedule::generate(small());
  INFO(ov::verify::verify_report(two));
  CHECK(ov::verify::verify(two).empty());
  CHECK(reduced_bytes(two[0]) == 2 * (1'692'928 + 2 * 722'176));
  // The second MTP layer (transformer layer 5) predicts from the first's output (4).
  CHECK(index_of(two[0], {.type = sc::op_type::fc2_fprop, .at = {.layer = 3, .micro_batch = 1}}) <
        index_of(two[0], {.type = sc::op_type::mtp_proj_fprop, .at = {.layer = 5, .micro_batch = 1}}));
  static_assert(mtp1::schedule::op_types.contains(sc::op_type::mtp_proj_fprop));
  static_assert(mtp1::schedule::op_types.contains(sc::op_type::mtp_proj_wgrad));
  static_assert(!plain::schedule::op_types.contains(sc::op_type::mtp_proj_dgrad));
}

TEST_CASE("MTP on the last stage of an interleaved tp pipeline with experts and EP overlap") {
  using every = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<2>, ov::vpp<2>, ov::dp<2>, ov::ep<2>, ov::etp<1>,
                           ov::num_moe_experts<8>, ov::distributed_optimizer<>, ov::overlap_grad_reduce<>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::mtp_num_layers<1>>;
  const sc::workload w{.num_layers = 4,
                       .micro_batches = 4,
                       .seq_length = 256,
                       .hidden_size = 512,
                       .ffn_hidden_size = 1024,
                       .num_attention_heads = 8,
                       .vocab_size = 1024,
                       .moe_router_topk = 2,
                       .moe_ffn_hidden_size = 256};
  const auto step = every::schedule::generate(w);
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  for (const auto& p : step) {
    std::size_t eh = 0;
    for (const auto& o : p.ops) eh += o.key.type == sc::op_type::mtp_proj_fprop;
    // Ranks are tp fastest, then dp, then pp: ranks 4..7 are the last stage, with one MTP
    // projection a micro-batch.
    CHECK(eh == (p.rank >= 4 ? 4u : 0u));
    if (p.rank >= 4) {
      // tp 2: the input (2 h) gathered over the sequence, the output over h: 256 x 1024 x 2 and
      // 256 x 512 x 2 bytes.
      std::int64_t gathered = 0;
      for (const auto& o : p.ops)
        if (o.key.type == sc::op_type::tp_all_gather && o.key.slot == sc::op_type::mtp_proj_fprop &&
            o.key.at.micro_batch == 0)
          gathered += o.bytes;
      CHECK(gathered == 256 * 1024 * 2 + 256 * 512 * 2);
    }
  }
  const auto r = ov::sim::simulate(step, ov::sim::analytic_cost_model(ov::sim::h100_node()));
  CHECK_FALSE(r.deadlock);
  CHECK(r.step_time_us > 0);
}

TEST_CASE("EP overlap with two MTP layers stays refused (EP-12)") {
  const ov::report r = ov::validate([] {
    ov::settings s{};
    s.expert_model_parallel_size = 2;
    s.data_parallel_size = 2;
    s.num_moe_experts = 8;
    s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
    s.precision = ov::dtype::bf16;
    s.overlap_moe_expert_parallel_comm = true;
    s.mtp_num_layers = 2;
    return s;
  }());
  CHECK(r.violates("EP-12"));
}
