// The 19 upstream TP userbuffer presets: each is valid in the run its name describes, and its
// slots carry upstream's values.
#include <doctest/doctest.h>

#include <overlap/overlap.hpp>

namespace ov = overlap;
namespace ub = overlap::ub;

namespace {
template <class Preset>
constexpr ov::report check_in_matching_run() {
  constexpr auto run = ov::rules::parse_preset_name(Preset::preset_name);
  constexpr auto gpu = run.b200_family ? ov::gpu_model::b200 : ov::gpu_model::h100;
  return ov::check<ov::tp<run.tp>, ov::cp<run.cp.value_or(1)>, ov::sequence_parallel<>, ov::fp8<run.fp8>, ov::gpu<gpu>,
                   ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<Preset>>();
}

template <class... Presets>
int count_valid_without_notes() {
  return ((check_in_matching_run<Presets>().ok() && check_in_matching_run<Presets>().notes.empty()) + ...);
}
}  // namespace

TEST_CASE("every preset is valid, without TP-18, in the run its name describes") {
  const int valid = count_valid_without_notes<
      ub::userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192, ub::userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192,
      ub::userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192, ub::userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192,
      ub::userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192, ub::userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192,
      ub::userbuffers_bf16_b200_h16384_tp4_cp2_mbs1_seqlen8192, ub::userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192,
      ub::userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora, ub::userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora,
      ub::userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048, ub::userbuffers_fp8_h100_h6144_tp2_mbs2_seqlen2048,
      ub::userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048, ub::userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048,
      ub::userbuffers_bf16_b200_h12288_tp4_mbs1_seqlen2048, ub::userbuffers_fp8_b200_h12288_tp4_mbs1_seqlen2048,
      ub::userbuffers_bf16_b200_h6144_tp2_mbs1_seqlen4096, ub::userbuffers_bf16_b200_h18432_tp8_mbs1_seqlen4096,
      ub::userbuffers_fp8_b200_h18432_tp8_mbs1_seqlen4096>();
  CHECK(valid == 19);
}

TEST_CASE("preset slots carry upstream's values") {
  constexpr auto p1 = ub::user_config_of<ub::userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192>();
  CHECK(p1.slots.qkv_wgrad == ub::slot{ub::method::bulk, 24, 2});
  CHECK(p1.slots.proj_fprop == ub::slot{ub::method::pipeline, 24, 2, 4, true});
  CHECK(p1.slots.fc2_fprop == ub::slot{ub::method::pipeline, 16, 2, 4, true});
  CHECK(p1.slots.qkv_fprop == ub::slot{ub::method::ring_exchange, 1, 1});

  constexpr auto p9 = ub::user_config_of<ub::userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora>();
  CHECK_FALSE(p9.slots.qkv_wgrad.has_value());
  CHECK_FALSE(p9.slots.fc1_wgrad.has_value());
  CHECK(p9.slots.fc1_dgrad == ub::slot{ub::method::pipeline, 16, 2, 4, true, false, true});
  CHECK(p9.slots.proj_fprop == ub::slot{ub::method::ring_exchange, 1, 2, 0, true, false, true});

  constexpr auto p13 = ub::user_config_of<ub::userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048>();
  CHECK(p13.slots.fc2_fprop == ub::slot{ub::method::ring_exchange, 1, 1, 0, true});
  CHECK(p13.preset_name == "userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048");

  constexpr auto p18 = ub::user_config_of<ub::userbuffers_bf16_b200_h18432_tp8_mbs1_seqlen4096>();
  CHECK(p18.slots.proj_fprop == ub::slot{ub::method::ring_exchange, 1, 1, 0, true});
  CHECK(p18.slots.fc2_fprop == ub::slot{ub::method::pipeline, 24, 2, 4, true});
}

TEST_CASE("preset names are read as upstream spells them") {
  constexpr auto r = ov::rules::parse_preset_name("userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192");
  CHECK(r.tp == 4);
  CHECK(r.cp == 2);
  CHECK(r.fp8);
  CHECK(r.b200_family);
  constexpr auto h = ov::rules::parse_preset_name("userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048");
  CHECK(h.tp == 2);
  CHECK_FALSE(h.cp.has_value());
  CHECK_FALSE(h.fp8);
  CHECK_FALSE(h.b200_family);
}
