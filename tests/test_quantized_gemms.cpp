// fp8 and fp4 recipes: which GEMMs of the step take their operands quantized (those of Transformer
// Engine's modules), how much faster the cost model runs them (the machine's measured speedup,
// kernel against kernel, with the cast priced as memory traffic), and the refusals: fp8 with fp4,
// and fp4 on a GPU without fp4 tensor cores. Numbers computed by hand below.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/cost/analytic.hpp>
#include <overlap/sim/machine/blackwell.hpp>
#include <overlap/sim/simulate.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
sc::workload small_moe() {
  return {.num_layers = 2,
          .micro_batches = 2,
          .seq_length = 1024,
          .micro_batch_size = 1,
          .hidden_size = 1024,
          .ffn_hidden_size = 4096,
          .num_attention_heads = 8,
          .vocab_size = 4096,
          .moe_router_topk = 2,
          .moe_ffn_hidden_size = 512};
}
template <class... Extra>
using moe =
    ov::config<ov::ep<2>, ov::dp<2>, ov::num_moe_experts<8>, ov::moe_shared_expert_intermediate_size<512>,
               ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>, Extra...>;

sc::gemm_format format_of(const sc::program& p, sc::op_type t) {
  for (const auto& o : p.ops)
    if (o.key.type == t) return o.format;
  FAIL("no " << sc::to_string(t));
  return sc::gemm_format::native;
}

sc::op gemm(sc::op_type t, sc::gemm_format f, std::int64_t m, std::int64_t n, std::int64_t k) {
  sc::op o;
  o.kind = sc::op_kind::compute;
  o.format = f;
  o.key.type = t;
  o.gemm = {m, n, k};
  o.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return o;
}
}  // namespace

TEST_CASE("fp8 and fp4 quantize the GEMMs of Transformer Engine's modules, nothing else") {
  for (const auto& [step, want] : {std::pair{moe<ov::fp8<>>::schedule::generate(small_moe()), sc::gemm_format::fp8},
                                   std::pair{moe<ov::fp4<>>::schedule::generate(small_moe()), sc::gemm_format::fp4},
                                   std::pair{moe<>::schedule::generate(small_moe()), sc::gemm_format::native}}) {
    const sc::program& p = step[0];
    for (const sc::op_type t :
         {sc::op_type::qkv_fprop, sc::op_type::qkv_wgrad, sc::op_type::proj_dgrad, sc::op_type::experts_fprop,
          sc::op_type::experts_wgrad, sc::op_type::shared_experts_dgrad})
      CHECK(format_of(p, t) == want);
    for (const sc::op_type t : {sc::op_type::attn_core_fprop, sc::op_type::router_fprop, sc::op_type::lm_head_fprop,
                                sc::op_type::layernorm_fprop, sc::op_type::permute_fprop, sc::op_type::optimizer_step})
      CHECK(format_of(p, t) == sc::gemm_format::native);
  }
  using both = moe<ov::fp8<>, ov::fp4<>>;
  CHECK_THROWS_WITH_AS(both::schedule::generate(small_moe()), doctest::Contains("fp8 and fp4 are both set"),
                       std::invalid_argument);
}

TEST_CASE("a quantized GEMM runs at the machine's speedup, its module's memory-bound kernels as before") {
  // proj_fprop of 8192^3 with 1 MB of module bytes on a B200: the GEMM's bf16 time over 1.42 in
  // fp8 (MXFP8, casts included), over 1.81 in fp4; the module's bytes at the memory-bound kernels'
  // 7.7 TB/s x 0.876 either way.
  const ov::sim::analytic_cost_model b200(ov::sim::b200_node());
  const double memory = 1e6 / (7.7e6 * 0.876);
  const auto with_bytes = [](sc::op o) {
    o.memory_bytes = 1'000'000;
    return o;
  };
  const double native =
      b200.compute_us(with_bytes(gemm(sc::op_type::proj_fprop, sc::gemm_format::native, 8192, 8192, 8192)), 148);
  CHECK(b200.compute_us(with_bytes(gemm(sc::op_type::proj_fprop, sc::gemm_format::fp8, 8192, 8192, 8192)), 148) ==
        doctest::Approx((native - memory) / 1.42 + memory));
  CHECK(b200.compute_us(with_bytes(gemm(sc::op_type::proj_fprop, sc::gemm_format::fp4, 8192, 8192, 8192)), 148) ==
        doctest::Approx((native - memory) / 1.81 + memory));
  // On the H200 profile: the measured bf16 time over 1.58 (current scaling, casts included).
  const ov::sim::analytic_cost_model h200(ov::sim::h200_node());
  const double measured = h200.compute_us(gemm(sc::op_type::fc2_dgrad, sc::gemm_format::native, 8192, 8192, 8192), 132);
  CHECK(h200.compute_us(gemm(sc::op_type::fc2_dgrad, sc::gemm_format::fp8, 8192, 8192, 8192), 132) ==
        doctest::Approx(measured / 1.58));
  // Routed experts' grouped GEMMs take the same factor.
  const sc::op experts = [] {
    sc::op o = gemm(sc::op_type::experts_fprop, sc::gemm_format::native, 2048, 1024, 4096);
    o.gemm.groups = 8;
    return o;
  }();
  sc::op quantized = experts;
  quantized.format = sc::gemm_format::fp8;
  CHECK(h200.compute_us(quantized, 132) == doctest::Approx(h200.compute_us(experts, 132) / 1.58));
}

TEST_CASE("fp4 on Hopper is refused, naming the format and the machine") {
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  CHECK_THROWS_WITH_AS(h100.compute_us(gemm(sc::op_type::fc1_fprop, sc::gemm_format::fp4, 4096, 4096, 4096), 132),
                       doctest::Contains("fp4, which the machine h100 has no tensor cores"), std::invalid_argument);
  const auto step = moe<ov::fp4<>>::schedule::generate(small_moe());
  CHECK_THROWS_AS(ov::sim::simulate(step, h100), std::invalid_argument);
}

TEST_CASE("a step is faster in fp8 than in bf16, and faster in fp4 than in fp8") {
  const ov::sim::analytic_cost_model b200(ov::sim::b200_node());
  const double bf16 = ov::sim::simulate(moe<>::schedule::generate(small_moe()), b200).step_time_us;
  const double fp8 = ov::sim::simulate(moe<ov::fp8<>>::schedule::generate(small_moe()), b200).step_time_us;
  const double fp4 = ov::sim::simulate(moe<ov::fp4<>>::schedule::generate(small_moe()), b200).step_time_us;
  CHECK(fp8 < bf16);
  CHECK(fp4 < fp8);
}
