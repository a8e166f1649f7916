// Multi-latent attention (workload::multi_latent_attention): its parameters as Megatron-LM counts
// them, the GEMM shapes and flops of its projections and core attention, the latents its
// tensor-parallel collectives carry, the parameters tensor parallelism leaves whole, and the
// up projections that recompute_modules "mla_up_proj" repeats. Every number is computed by hand
// in the comments.
#include <doctest/doctest.h>

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
using test_queries::reduced_bytes;
using test_queries::small_mla;

std::int64_t total_bytes(const sc::program& p, sc::op_type type, sc::op_type slot) {
  std::int64_t total = 0;
  for (const auto& o : p.ops)
    if (o.key.type == type && o.key.slot == slot && o.key.at.layer == 0 && o.key.at.micro_batch == 0) total += o.bytes;
  return total;
}

using dp2 = ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>>;
using tp2 = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>>;
constexpr sc::location first{.layer = 0, .micro_batch = 0};
}  // namespace

TEST_CASE("MLA's parameters are Megatron-LM's count") {
  const sc::workload w = small_mla();
  // Megatron-LM (theoretical_memory_usage.py): q = q_lora (h + a (qk + pos) + 1) = 64 x (256 + 4 x 48 + 1)
  // = 28,736; kv = kv_lora (h + a (qk + v) + 1) + h pos = 32 x (256 + 4 x 64 + 1) + 256 x 16 = 20,512.
  CHECK(w.qkv_parameters() == 28'736 + 20'512);
  // Replicated over tp: the q down projection and its norm 64 x 257 = 16,448, the kv down
  // projection (32 + 16) x 256 = 12,288 and its norm 32; the up projections 64 x 192 + 32 x 256 =
  // 20,480 are split.
  CHECK(w.mla_replicated_parameters() == 16'448 + 12'288 + 32);
  CHECK(w.mla_up_parameters() == 20'480);
  CHECK(w.qkv_local_parameters(2) == 28'768 + 10'240);
  CHECK(w.proj_parameters() == 4 * 32 * 256);  // heads x v x h
  // Without a q latent, q comes from the hidden state: h x a (qk + pos) = 256 x 192.
  sc::workload direct = w;
  direct.q_lora_rank = 0;
  CHECK(direct.qkv_parameters() == 256 * 192 + 20'512);
  CHECK(direct.mla_replicated_parameters() == 12'288 + 32);
  // DeepSeek-V3: 187,107,328 attention parameters a layer (69,666,816 + 117,440,512).
  const sc::workload v3{.hidden_size = 7168,
                        .num_attention_heads = 128,
                        .multi_latent_attention = true,
                        .q_lora_rank = 1536,
                        .kv_lora_rank = 512,
                        .qk_head_dim = 128,
                        .qk_pos_emb_head_dim = 64,
                        .v_head_dim = 128};
  CHECK(v3.qkv_parameters() == 69'666'816);
  CHECK(v3.qkv_parameters() + v3.proj_parameters() == 187'107'328);
}

TEST_CASE("MLA's GEMMs and core attention in shapes and flops") {
  const auto step = dp2::schedule::generate(small_mla());
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const sc::program& p = step[0];
  // The four projections as one GEMM: 49,248 parameters over h 256 = 192.4, rounded up to 193
  // columns: 2 x 128 x 193 x 256 flops, within 0.4 % of the exact 2 x 128 x 49,248.
  const sc::op& qkv = find(p, {.type = sc::op_type::qkv_fprop, .at = first});
  CHECK(qkv.gemm == sc::gemm_shape{128, 193, 256});
  CHECK(qkv.flops == doctest::Approx(2.0 * 128 * 193 * 256));
  CHECK(qkv.flops == doctest::Approx(2.0 * 128 * 49'248).epsilon(0.004));
  // The projection reads the values: heads x v = 128 wide.
  CHECK(find(p, {.type = sc::op_type::proj_fprop, .at = first}).gemm == sc::gemm_shape{128, 256, 128});
  // Causal core attention: tokens x seq x heads x (qk + pos + v) = 128 x 128 x 4 x (48 + 32), the
  // backward 2.5 times that; its problem's head is their mean, 40.
  const sc::op& core = find(p, {.type = sc::op_type::attn_core_fprop, .at = first});
  CHECK(core.flops == doctest::Approx(128.0 * 128 * 4 * 80));
  CHECK(core.gemm.k == 40);
  CHECK(find(p, {.type = sc::op_type::attn_core_bprop, .at = first}).flops ==
        doctest::Approx(2.5 * 128 * 128 * 4 * 80));
  // Rotary embedding on q's 4 x 16 and k's shared 16 columns, read and written, goes with the qkv
  // GEMM: 2 x 128 x 80 elements on top of the add and norm's 5 x 128 x 256, in bf16.
  CHECK(qkv.memory_bytes == 2 * (5 * 128 * 256 + 2 * 128 * 80));
}

TEST_CASE("with tp, MLA gathers its latents and keeps its down projections whole") {
  const sc::workload w = small_mla();
  const auto step = tp2::schedule::generate(w);
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const sc::program& p = step[0];
  // The qkv slot's all-gather carries the latents (q 64, kv 32, k's rotary 16) of 128 tokens in
  // bf16: 128 x 112 x 2 = 28,672 bytes; fc1's the hidden state, 128 x 256 x 2.
  CHECK(total_bytes(p, sc::op_type::tp_all_gather, sc::op_type::qkv_fprop) == 28'672);
  CHECK(total_bytes(p, sc::op_type::tp_all_gather, sc::op_type::fc1_fprop) == 65'536);
  // The input gradient of the up projections is reduce-scattered back at the latents' width.
  CHECK(total_bytes(p, sc::op_type::tp_reduce_scatter, sc::op_type::qkv_dgrad) == 28'672);
  // qkv split over tp 2: ceil(49,248 / (256 x 2)) = 97 columns.
  CHECK(find(p, {.type = sc::op_type::qkv_fprop, .at = first}).gemm == sc::gemm_shape{128, 97, 256});
  // Parameters per rank: embedding and output layer 128,000 each; final norm 256; per layer two
  // norms 512, qkv 39,008 (the replicated 28,768 and half the up projections), proj 16,384,
  // fc1 131,072, fc2 65,536 = 252,512. Reduced in bf16 over dp 2.
  CHECK(reduced_bytes(p) == 2 * (2 * 128'000 + 256 + 2 * 252'512));
  // The simulator runs it.
  CHECK(ov::sim::simulate(step, ov::sim::analytic_cost_model(ov::sim::h100_node())).step_time_us > 0);
}

TEST_CASE("recompute_modules mla_up_proj repeats the up projections before the attention backward") {
  using again =
      ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>, ov::recompute_granularity<ov::granularity::selective>,
                 ov::recompute_modules<ov::module::mla_up_proj>>;
  const auto step = again::schedule::generate(small_mla());
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const sc::program& p = step[0];
  // From the latents (112 wide) to the up projections' 20,480 parameters: ceil(20,480 / 112) =
  // 183 columns, 2 x 128 x 183 x 112 flops (within 0.1 % of 2 x 128 x 20,480), and the rotary
  // embedding again (2 x 128 x 80 elements).
  const sc::op& up = find(p, {.type = sc::op_type::qkv_fprop, .at = first, .recompute = true});
  CHECK(up.gemm == sc::gemm_shape{128, 183, 112});
  CHECK(up.flops == doctest::Approx(2.0 * 128 * 20'480).epsilon(0.001));
  CHECK(up.memory_bytes == 2 * 2 * 128 * 80);
  // Core attention is not repeated (only "mla_up_proj" asked), and nothing else is.
  std::size_t repeated = 0;
  for (const auto& o : p.ops) repeated += o.key.recompute;
  CHECK(repeated == 2 * 2);  // layers x micro-batches
}

TEST_CASE("MLA's sizes are checked") {
  sc::workload w = small_mla();
  w.kv_lora_rank = 0;
  CHECK_THROWS_WITH_AS(dp2::schedule::generate(w), doctest::Contains("with multi_latent_attention"),
                       std::invalid_argument);
  w = small_mla();
  w.num_attention_heads = 3;  // not a multiple of tp 2; num_query_groups and kv_channels say nothing
  CHECK_THROWS_WITH_AS(tp2::schedule::generate(w), doctest::Contains("num_attention_heads must be a multiple of tp"),
                       std::invalid_argument);
  w = small_mla();
  w.q_lora_rank = 1 << 30;
  w.kv_lora_rank = 1 << 30;
  CHECK_THROWS_WITH_AS(dp2::schedule::generate(w), doctest::Contains("the qkv projection's width"),
                       std::invalid_argument);
  CHECK(sc::beyond_planned(w).size() == 2);
}
