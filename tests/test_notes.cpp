// One test per N rule of the rule table (docs/rules.md): advice in cfg::notes that never fails a build.
#include <doctest/doctest.h>

#include <string_view>

#include <overlap/overlap.hpp>

namespace ov = overlap;

namespace {
template <class Cfg>
bool has_note(std::string_view id) {
  for (const auto& n : Cfg::notes)
    if (n.id == id) return true;
  return false;
}
}  // namespace

TEST_CASE("[TP-10] expert and tensor parallelism without sequence parallelism") {
  using without = ov::config<ov::tp<2>, ov::ep<4>, ov::etp<1>, ov::dp<2>, ov::num_moe_experts<8>>;
  CHECK(has_note<without>("TP-10"));
  CHECK(without::notes.size() == 1);
  using with = ov::config<ov::tp<2>, ov::ep<4>, ov::etp<1>, ov::dp<2>, ov::num_moe_experts<8>, ov::sequence_parallel<>>;
  CHECK_FALSE(has_note<with>("TP-10"));
}

TEST_CASE("[TP-18] a preset tuned for another tp, precision or GPU family") {
  using preset = ov::ub::userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048;
  using matching = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
                              ov::tp_comm_overlap_cfg<preset>, ov::gpu<ov::gpu_model::h200>>;
  CHECK(matching::notes.empty());
  using other_tp =
      ov::config<ov::tp<8>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<preset>>;
  CHECK(has_note<other_tp>("TP-18"));
  using fp8_run =
      ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::fp8<>, ov::tp_comm_overlap_cfg<preset>>;
  CHECK(has_note<fp8_run>("TP-18"));
  using blackwell = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
                               ov::tp_comm_overlap_cfg<preset>, ov::gpu<ov::gpu_model::b200>>;
  CHECK(has_note<blackwell>("TP-18"));
  using cp_preset = ov::ub::userbuffers_bf16_b200_h16384_tp4_cp2_mbs1_seqlen8192;
  using other_cp = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
                              ov::tp_comm_overlap_cfg<cp_preset>, ov::gpu<ov::gpu_model::gb200>>;
  CHECK(has_note<other_cp>("TP-18"));  // the preset says cp2, the config has cp 1
  using same_cp = ov::config<ov::tp<4>, ov::cp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
                             ov::tp_comm_overlap_cfg<cp_preset>, ov::gpu<ov::gpu_model::gb200>>;
  CHECK_FALSE(has_note<same_cp>("TP-18"));
}

TEST_CASE("[EP-21] EP overlap with TP on a pre-Blackwell GPU states the queue trade-off") {
  using hopper = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::etp<1>, ov::ep<8>, ov::dp<8>,
                            ov::num_moe_experts<64>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                            ov::precision<ov::dtype::bf16>, ov::overlap_moe_expert_parallel_comm<>>;
  REQUIRE(has_note<hopper>("EP-21"));
  for (const auto& n : hopper::notes)
    if (n.id == "EP-21") CHECK(n.message.find("CUDA_DEVICE_MAX_CONNECTIONS is 8") != std::string_view::npos);
  using blackwell =
      ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::etp<1>, ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>,
                 ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                 ov::overlap_moe_expert_parallel_comm<>, ov::gpu<ov::gpu_model::b200>>;
  CHECK_FALSE(has_note<blackwell>("EP-21"));
}

TEST_CASE("[EP-24] EP overlap with ep <= 4 on the alltoall dispatcher") {
  using small =
      ov::config<ov::ep<4>, ov::dp<4>, ov::num_moe_experts<64>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                 ov::precision<ov::dtype::bf16>, ov::overlap_moe_expert_parallel_comm<>>;
  CHECK(has_note<small>("EP-24"));
  using large =
      ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                 ov::precision<ov::dtype::bf16>, ov::overlap_moe_expert_parallel_comm<>>;
  CHECK_FALSE(has_note<large>("EP-24"));
}
