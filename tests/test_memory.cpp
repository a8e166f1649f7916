// The model state a rank keeps through the step (sim/analysis/memory.hpp), from its program's sized
// buffers: parameters, gradients and the optimizer's state, against Megatron-LM's
// compute_weight_and_optimizer_memory and hand-computed per-rank counts.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/verify/verify.hpp>

#include "step_checks.hpp"

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
using test_queries::small_gqa;
constexpr std::int64_t params = 1'692'928;  // small_gqa's, untied (test_workload.cpp)
}  // namespace

TEST_CASE("a dense model's state is Megatron-LM's 6 + 12 / dp bytes a parameter, 18 without sharding") {
  // Megatron-LM counts each norm with a bias (2 h) where RMSNorm has none: its formula gives
  // 2 x 2 x 256^2 x (1.5 + 3 + 2 / 256 + 1 / 512) = 1,182,208 for the layers and the final norm,
  // 1,280 more than the 1,180,928 here; with 512,000 for the untied embedding and output layer.
  using sharded =
      ov::config<ov::dp<2>, ov::distributed_optimizer<>, ov::grad_reduce_in_fp32<>, ov::precision<ov::dtype::bf16>>;
  const auto step = sharded::schedule::generate(small_gqa());
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const ov::sim::model_state m = ov::sim::model_state_of(step[0]);
  CHECK(m.weights == 2 * params);
  CHECK(m.gradients == 4 * params);
  CHECK(m.optimizer == 12 * params / 2);
  CHECK(m.total() == params * (6 + 12 / 2));
  // Without the distributed optimizer every rank keeps the whole state: 18 bytes a parameter.
  using replicated = ov::config<ov::dp<2>, ov::grad_reduce_in_fp32<>, ov::precision<ov::dtype::bf16>>;
  CHECK(ov::sim::model_state_of(replicated::schedule::generate(small_gqa())[1]).total() == 18 * params);
  // Gradients in bf16 when not reduced in fp32: 2 bytes.
  using bf16_grads = ov::config<ov::dp<2>, ov::distributed_optimizer<>, ov::precision<ov::dtype::bf16>>;
  CHECK(ov::sim::model_state_of(bf16_grads::schedule::generate(small_gqa())[0]).gradients == 2 * params);
}

TEST_CASE("with tp and pp a rank keeps its stage's tensors, the norms whole") {
  using split = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<2>, ov::dp<2>, ov::distributed_optimizer<>,
                           ov::grad_reduce_in_fp32<>, ov::precision<ov::dtype::bf16>>;
  const auto step = split::schedule::generate(small_gqa());
  // Rank 0 (stage 0, tp 0): half the embedding 128,000, layer 0's two norms 512 whole and half
  // of qkv 131,072, proj 65,536, fc1 262,144 and fc2 131,072: 423,424 parameters. (Megatron-LM's
  // most loaded shard, its norms with biases and split over tp: 423,552.)
  const ov::sim::model_state first = ov::sim::model_state_of(step[0]);
  CHECK(first.weights == 2 * 423'424);
  CHECK(first.gradients == 4 * 423'424);
  CHECK(first.optimizer == 12 * 423'424 / 2);
  // The last stage (ranks 4..7): layer 1 as above 295,424, the final norm 256 and half the
  // output layer 128,000.
  CHECK(ov::sim::model_state_of(step[4]).weights == 2 * (295'424 + 256 + 128'000));
}

TEST_CASE("experts' optimizer state is sharded over the expert data-parallel group") {
  // dp 4, ep 2: the dense tensors' state over 4 ranks, the experts' over the 2 ranks of the
  // expert data-parallel group. Per layer: two norms 512, qkv 131,072, proj 65,536, the router
  // 256 x 8 = 2,048 (199,168 dense), and 4 local experts of 3 x 256 x 512 (1,572,864); with the
  // embedding, output layer and final norm 512,256: 910,592 dense and 3,145,728 expert.
  using moe =
      ov::config<ov::ep<2>, ov::dp<4>, ov::num_moe_experts<8>, ov::distributed_optimizer<>, ov::grad_reduce_in_fp32<>,
                 ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>>;
  sc::workload w = small_gqa();
  w.moe_router_topk = 2;
  w.moe_ffn_hidden_size = 512;
  const auto step = moe::schedule::generate(w);
  INFO(ov::verify::verify_report(step));
  CHECK(ov::verify::verify(step).empty());
  const ov::sim::model_state m = ov::sim::model_state_of(step[0]);
  CHECK(m.weights == 2 * (910'592 + 3'145'728));
  CHECK(m.gradients == 4 * (910'592 + 3'145'728));
  CHECK(m.optimizer == 12 * 910'592 / 4 + 12 * 3'145'728 / 2);
}

TEST_CASE("Adam's state per parameter follows the optimizer's precision fields") {
  // optimizer_state.hpp, case by case (bytes a parameter of the updated shard).
  sc::optimizer_precision o;
  CHECK(sc::adam_state_bytes(o, ov::dtype::bf16) == 4 + 4 + 4);  // fp32 master and moments
  CHECK(sc::adam_state_bytes(o, ov::dtype::fp32) == 4 + 4);      // fp32 parameters are their own master
  // DeepSeek-V3's recipes: bf16 moments, fp32 master kept as 16-bit remainders.
  o = {.use_precision_aware_optimizer = true, .exp_avg_bytes = 2, .exp_avg_sq_bytes = 2};
  CHECK(sc::adam_state_bytes(o, ov::dtype::bf16) == 2 + 2 + 2);
  // Remainders need bf16 parameters and Transformer Engine 2.1.
  CHECK(sc::adam_state_bytes(o, ov::dtype::fp16) == 4 + 2 + 2);
  CHECK(sc::adam_state_bytes(o, ov::dtype::bf16, ov::version{2, 0, 0}) == 4 + 2 + 2);
  CHECK(sc::adam_state_bytes(o, ov::dtype::bf16, ov::version{2, 1, 0}) == 2 + 2 + 2);
  // An fp8 recipe with its own scales: Megatron-Core keeps the fp32 master copy whole.
  o.fp8_recipe_with_own_scales = true;
  CHECK(sc::adam_state_bytes(o, ov::dtype::bf16) == 4 + 2 + 2);
  // A 16-bit master copy stays with FusedAdam whatever the recipe; uint8 moments take a byte.
  o = {.use_precision_aware_optimizer = true,
       .main_params_bytes = 2,
       .exp_avg_bytes = 1,
       .exp_avg_sq_bytes = 1,
       .fp8_recipe_with_own_scales = true};
  CHECK(sc::adam_state_bytes(o, ov::dtype::bf16) == 2 + 1 + 1);
}

TEST_CASE("the precision-aware optimizer's state is what its settings hold, in the step's buffers") {
  // As the first test's sharded run: 1,692,928 parameters over dp 2, now 6 bytes each of state
  // (bf16 moments, fp32 master as remainders) instead of 12; weights and gradients unchanged.
  using sharded =
      ov::config<ov::dp<2>, ov::distributed_optimizer<>, ov::grad_reduce_in_fp32<>, ov::precision<ov::dtype::bf16>>;
  sc::workload w = small_gqa();
  w.optimizer = {.use_precision_aware_optimizer = true, .exp_avg_bytes = 2, .exp_avg_sq_bytes = 2};
  const auto step = sharded::schedule::generate(w);
  CHECK(ov::verify::verify(step).empty());
  const ov::sim::model_state m = ov::sim::model_state_of(step[0]);
  CHECK(m.optimizer == 6 * params / 2);
  CHECK(m.weights == 2 * params);
  CHECK(m.gradients == 4 * params);
}

TEST_CASE("fp8 parameters keep a byte each (two before Blackwell), MXFP8 ones two and their scales") {
  // small_gqa's TE linear weights: per layer qkv 256 x 512 = 131,072, proj 65,536, fc1 262,144,
  // fc2 131,072; 1,179,648 in its 2 layers. The rest stays bf16: 4 norms of 256 and the final
  // one (1,280), the untied embedding and output layer (512,000): 1,026,560 bytes. The gathers
  // move what the DDP buffer holds: a byte a parameter in fp8, 2 (bf16) with MXFP8.
  constexpr std::int64_t linear = 1'179'648, other = 2 * (1'280 + 512'000);
  static_assert(linear + 1'280 + 512'000 == params);
  const auto gathered = [](const sc::program& p) {
    std::int64_t bytes = 0;
    for (const sc::op& o : p.ops)
      if (o.key.type == sc::op_type::dp_param_gather) bytes += o.bytes;
    return bytes;
  };
  const auto weights = [](const sc::program& p) { return ov::sim::model_state_of(p).weights; };
  sc::workload w = small_gqa();
  using on_b200 =
      ov::config<ov::dp<2>, ov::distributed_optimizer<>, ov::overlap_param_gather<>, ov::grad_reduce_in_fp32<>,
                 ov::precision<ov::dtype::bf16>, ov::fp8<>, ov::fp8_param_gather<>, ov::gpu<ov::gpu_model::b200>>;
  using on_h100 =
      ov::config<ov::dp<2>, ov::distributed_optimizer<>, ov::overlap_param_gather<>, ov::grad_reduce_in_fp32<>,
                 ov::precision<ov::dtype::bf16>, ov::fp8<>, ov::fp8_param_gather<>, ov::gpu<ov::gpu_model::h100>>;
  SUBCASE("per-tensor scaling on Blackwell: a byte a parameter") {
    const auto step = on_b200::schedule::generate(w);
    CHECK(ov::verify::verify(step).empty());
    CHECK(weights(step[0]) == linear + other);
    CHECK(ov::sim::model_state_of(step[0]).gradients == 4 * params);
    CHECK(gathered(step[0]) == linear + other);
  }
  SUBCASE("per-tensor scaling on Hopper: the weight and its cached transpose") {
    const auto step = on_h100::schedule::generate(w);
    CHECK(weights(step[0]) == 2 * linear + other);
    CHECK(gathered(step[0]) == linear + other);
  }
  SUBCASE("MXFP8: row- and column-wise bytes and an E8M0 scale per 32 of each; gathered in bf16") {
    w.fp8_recipe_mxfp8 = true;
    for (const auto& step : {on_b200::schedule::generate(w), on_h100::schedule::generate(w)}) {
      CHECK(weights(step[0]) == 2 * linear + linear / 16 + other);
      CHECK(gathered(step[0]) == 2 * linear + other);
    }
  }
  SUBCASE("without fp8_param_gather the parameters stay bf16, whatever the recipe") {
    w.fp8_recipe_mxfp8 = true;
    using bf16_params =
        ov::config<ov::dp<2>, ov::distributed_optimizer<>, ov::overlap_param_gather<>, ov::grad_reduce_in_fp32<>,
                   ov::precision<ov::dtype::bf16>, ov::fp8<>, ov::gpu<ov::gpu_model::b200>>;
    const auto step = bf16_params::schedule::generate(w);
    CHECK(weights(step[0]) == 2 * params);
    CHECK(gathered(step[0]) == 2 * params);
  }
}

TEST_CASE("buffer sizes are checked: no more sizes than buffers, none negative") {
  auto step = ov::config<ov::dp<2>, ov::precision<ov::dtype::bf16>>::schedule::generate(small_gqa());
  sc::program p = step[0];
  p.buffer_bytes.push_back(-1);
  p.buffer_bytes.resize(p.buffers.size() + 1, 0);
  CHECK_FALSE(ov::verify::verify({p, step[1]}).empty());
  p = step[0];
  p.buffer_bytes[0] = -5;
  CHECK(ov::verify::verify_report({p, step[1]}).find("has -5 bytes") != std::string::npos);
  // The memory analysis refuses them too, and state that adds up past 2^63 bytes.
  CHECK_THROWS_WITH_AS(ov::sim::model_state_of(p), doctest::Contains("buffer 0 of -5 bytes"), std::invalid_argument);
  CHECK_THROWS_AS(ov::sim::peak_in_issue_order(p), std::invalid_argument);
  p.buffer_bytes.assign(p.buffers.size(), std::numeric_limits<std::int64_t>::max() / 2);
  CHECK_THROWS_WITH_AS(ov::sim::model_state_of(p), doctest::Contains("past 2^63 bytes"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(ov::sim::peak_in_issue_order(p), doctest::Contains("past 2^63 bytes"), std::invalid_argument);
}
