// One test per D rule of the rule table (docs/rules.md): the resolved values upstream derives.
#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/settings/print.hpp>

namespace ov = overlap;
namespace ub = overlap::ub;

TEST_CASE("[TP-5] tp_comm_overlap without a cfg gives every slot TE-6's default") {
  using cfg = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>>;
  constexpr auto slots = cfg::resolved.tp_comm_overlap_cfg;
  for (const ub::slot_id id : ub::all_slots) {
    CAPTURE(ub::to_string(id));
    CHECK(slots[id] == ub::default_knobs(ub::default_method(id)));
  }
  CHECK(slots.proj_fprop.method == ub::method::pipeline);
  CHECK(slots.proj_fprop.num_splits == 4);
  CHECK(slots.qkv_fprop.method == ub::method::ring_exchange);
  CHECK(slots.qkv_fprop.num_sm == 1);
  CHECK(slots.fc1_wgrad.method == ub::method::bulk);
  CHECK(slots.fc1_wgrad.num_sm == 16);
  CHECK(slots.fc1_wgrad.cga_size == 2);
  using off = ov::config<ov::tp<2>, ov::sequence_parallel<>>;
  for (const ub::slot_id id : ub::all_slots) CHECK(off::resolved.tp_comm_overlap_cfg[id] == ub::slot{});
}

namespace {
struct only_fc2_ring {
  using fc2_fprop = ub::ring_exchange<2, 1, true>;
};
}  // namespace

TEST_CASE("[TE-6] undeclared slots get defaults, a wgrad slot next to a non-bulk dgrad is none") {
  using custom =
      ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<only_fc2_ring>>;
  constexpr auto c = custom::resolved.tp_comm_overlap_cfg;
  CHECK(c.fc2_fprop.method == ub::method::ring_exchange);
  CHECK(c.fc2_fprop.num_sm == 2);
  CHECK(c.fc2_fprop.set_sm_margin);
  CHECK(c.proj_fprop == ub::slot{ub::method::pipeline, 16, 2, 4});
  CHECK(c.qkv_dgrad == ub::slot{ub::method::bulk, 16, 2});

  using lora = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::fp8<>,
                          ov::tp_comm_overlap_cfg<ub::userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora>>;
  constexpr auto l = lora::resolved.tp_comm_overlap_cfg;
  CHECK(l.fc1_dgrad.method == ub::method::pipeline);
  CHECK(l.fc1_wgrad.method == ub::method::none);  // TE-2 moved fc1_dgrad into its place
  CHECK(l.fc1_wgrad == ub::slot{});
  CHECK(l.qkv_dgrad.method == ub::method::bulk);
  CHECK(l.qkv_wgrad == ub::slot{ub::method::bulk, 16, 2});  // bulk dgrad: wgrad takes the default
}

TEST_CASE("[PP-1] pp > 1 with vpp: overlap_p2p_comm on, batch_p2p_comm off") {
  using cfg = ov::config<ov::pp<4>, ov::vpp<2>>;
  CHECK(cfg::resolved.overlap_p2p_comm);
  CHECK_FALSE(cfg::resolved.batch_p2p_comm);
}

TEST_CASE("[PP-2] pp > 1 without vpp: batch_p2p_comm on, overlap_p2p_comm off") {
  using cfg = ov::config<ov::pp<4>>;
  CHECK_FALSE(cfg::resolved.overlap_p2p_comm);
  CHECK(cfg::resolved.batch_p2p_comm);
}

TEST_CASE("[PP-3] pp == 1: both p2p flags off") {
  using cfg = ov::config<ov::tp<2>>;
  CHECK_FALSE(cfg::resolved.overlap_p2p_comm);
  CHECK_FALSE(cfg::resolved.batch_p2p_comm);
  using user = ov::config<ov::pp<4>, ov::vpp<2>, ov::overlap_p2p_comm<false>>;  // PP-8 needs pp > 2
  CHECK_FALSE(user::resolved.overlap_p2p_comm);                                 // the user's value wins over PP-1
}

TEST_CASE("[PP-12] embedding wgrad deferral off and limit 0 unless set") {
  using none = ov::config<ov::pp<2>>;
  CHECK_FALSE(none::resolved.defer_embedding_wgrad_compute);
  CHECK(none::resolved.wgrad_deferral_limit == 0);
  using set = ov::config<ov::pp<2>, ov::defer_embedding_wgrad_compute<>, ov::gradient_accumulation_fusion<>,
                         ov::wgrad_deferral_limit<3>>;
  CHECK(set::resolved.defer_embedding_wgrad_compute);
  CHECK(set::resolved.wgrad_deferral_limit == 3);
}

TEST_CASE("[DP-1] distributed optimizer with dp > 1: DP overlap on, 128 Mi-parameter buckets") {
  using cfg = ov::config<ov::dp<8>, ov::distributed_optimizer<>>;
  CHECK(cfg::resolved.overlap_grad_reduce);
  CHECK(cfg::resolved.overlap_param_gather);
  CHECK_FALSE(cfg::resolved.overlap_param_gather_with_optimizer_step);
  CHECK(cfg::resolved.bucket_size == 134'217'728);
  CHECK_FALSE(cfg::resolved.align_param_gather);
  using buckets = ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::num_buckets<4>>;
  CHECK_FALSE(buckets::resolved.bucket_size.has_value());
  CHECK(buckets::resolved.num_buckets == 4);
}

TEST_CASE("[DP-2] DP-1 with an interleaved pipeline aligns the param gathers") {
  using cfg = ov::config<ov::dp<8>, ov::pp<4>, ov::vpp<2>, ov::distributed_optimizer<>>;
  CHECK(cfg::resolved.align_param_gather);
  using plain = ov::config<ov::dp<8>, ov::pp<4>, ov::distributed_optimizer<>>;
  CHECK_FALSE(plain::resolved.align_param_gather);
}

TEST_CASE("[DP-3] dp == 1 or no distributed optimizer: DP overlap off, no bucket size") {
  using single = ov::config<ov::distributed_optimizer<>>;
  CHECK_FALSE(single::resolved.overlap_grad_reduce);
  CHECK_FALSE(single::resolved.overlap_param_gather);
  CHECK_FALSE(single::resolved.align_param_gather);
  CHECK_FALSE(single::resolved.bucket_size.has_value());
  using no_dist_opt = ov::config<ov::dp<8>>;
  CHECK_FALSE(no_dist_opt::resolved.overlap_grad_reduce);
  CHECK_FALSE(no_dist_opt::resolved.bucket_size.has_value());
}

TEST_CASE("[DP-13] grad-reduce overlap without DP-1: bucket_size = max(40M, 1M x dp)") {
  using small = ov::config<ov::dp<8>, ov::overlap_grad_reduce<>>;
  CHECK(small::resolved.bucket_size == 40'000'000);
  using large = ov::config<ov::dp<64>, ov::overlap_grad_reduce<>>;
  CHECK(large::resolved.bucket_size == 64'000'000);
  using given = ov::config<ov::dp<64>, ov::overlap_grad_reduce<>, ov::bucket_size<1'000'000>>;
  CHECK(given::resolved.bucket_size == 1'000'000);
}

TEST_CASE("[DP-19] LayerNorm SM margins follow DP overlap unless set") {
  using dp_overlap = ov::config<ov::dp<8>, ov::distributed_optimizer<>>;
  CHECK(dp_overlap::resolved.nvte_fwd_layernorm_sm_margin == 16);
  CHECK(dp_overlap::resolved.nvte_bwd_layernorm_sm_margin == 16);
  using pinned = ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::layernorm_sm_margin<20>>;
  CHECK(pinned::resolved.nvte_fwd_layernorm_sm_margin == 20);
  CHECK(pinned::resolved.nvte_bwd_layernorm_sm_margin == 20);
  using none = ov::config<ov::dp<8>>;
  CHECK_FALSE(none::resolved.nvte_fwd_layernorm_sm_margin.has_value());
}

TEST_CASE("environment_of: the variables the run needs, by name, unset ones left out") {
  using cfg = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::layernorm_sm_margin<16>>;
  const std::vector<ov::environment_variable> env = ov::environment_of(cfg::resolved);
  REQUIRE(env.size() == 3);
  CHECK(env[0].name == "CUDA_DEVICE_MAX_CONNECTIONS");
  CHECK(env[0].value == 1);
  CHECK(env[1].name == "NVTE_FWD_LAYERNORM_SM_MARGIN");
  CHECK(env[2].value == 16);
  std::ostringstream text;
  ov::write_environment(text, cfg::resolved);
  CHECK(text.str() ==
        "export CUDA_DEVICE_MAX_CONNECTIONS=1\nexport NVTE_FWD_LAYERNORM_SM_MARGIN=16\n"
        "export NVTE_BWD_LAYERNORM_SM_MARGIN=16\n");
  CHECK(ov::environment_of(ov::config<ov::dp<8>, ov::cuda_device_max_connections<8>>::resolved).size() == 1);
}

TEST_CASE("[EP-13] EP overlap and delayed wgrad are off unless set") {
  using cfg = ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>>;
  CHECK_FALSE(cfg::resolved.overlap_moe_expert_parallel_comm);
  CHECK_FALSE(cfg::resolved.delay_wgrad_compute);
}

TEST_CASE("[ENV-6] CUDA_DEVICE_MAX_CONNECTIONS: 32 Blackwell, 1 TP/CP, 32 deepep, else 8") {
  CHECK(ov::config<ov::dp<8>>::resolved.cuda_device_max_connections == 8);
  CHECK(ov::config<ov::tp<2>>::resolved.cuda_device_max_connections == 1);
  CHECK(ov::config<ov::cp<2>>::resolved.cuda_device_max_connections == 1);
  CHECK(ov::config<ov::tp<2>, ov::gpu<ov::gpu_model::gb200>>::resolved.cuda_device_max_connections == 32);
  using deepep =
      ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::moe_token_dispatcher_type<ov::dispatcher::flex>,
                 ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>>;
  CHECK(deepep::resolved.cuda_device_max_connections == 32);
  using ep_overlap_tp = ov::config<ov::tp<2>, ov::ep<8>, ov::dp<8>, ov::etp<1>, ov::num_moe_experts<64>,
                                   ov::sequence_parallel<>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                                   ov::precision<ov::dtype::bf16>, ov::overlap_moe_expert_parallel_comm<>>;
  CHECK(ep_overlap_tp::resolved.cuda_device_max_connections == 8);
  using pinned = ov::config<ov::tp<2>, ov::cuda_device_max_connections<1>>;
  CHECK(pinned::resolved.cuda_device_max_connections == 1);
}
