#pragma once
/// @file
/// The 19 TP userbuffer presets of upstream Megatron-Bridge, under upstream's names, slot by slot.
/// Slots a preset leaves empty (the wgrad slots of the two LoRA presets) are not declared. The
/// pipeline slots' `fp8_buf` default upstream, `(False,)`, is truthy in Python by accident; it is
/// read as the false it means.
/// A preset's name says the run it was tuned for; note TP-18 compares it with the config.

#include <string_view>

#include <overlap/config/ub.hpp>

namespace overlap::ub {

/// Upstream preset #1.
struct userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192";
  using qkv_dgrad = bulk<4, 2, false>;
  using qkv_wgrad = bulk<24, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<4, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = pipeline<24, 2, 4, true, false, false>;
  using fc2_fprop = pipeline<16, 2, 4, true, false, false>;
};

/// Upstream preset #2.
struct userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192";
  using qkv_dgrad = bulk<4, 2, false>;
  using qkv_wgrad = bulk<24, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<4, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #3.
struct userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192";
  using qkv_dgrad = bulk<16, 2, false>;
  using qkv_wgrad = bulk<24, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<4, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = pipeline<32, 2, 4, true, false, false>;
  using fc2_fprop = pipeline<16, 2, 4, true, false, false>;
};

/// Upstream preset #4.
struct userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192";
  using qkv_dgrad = bulk<4, 2, false>;
  using qkv_wgrad = bulk<24, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<4, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #5.
struct userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192";
  using qkv_dgrad = bulk<2, 2, false>;
  using qkv_wgrad = bulk<24, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<2, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = pipeline<24, 2, 4, true, false, false>;
  using fc2_fprop = pipeline<8, 2, 4, true, false, false>;
};

/// Upstream preset #6.
struct userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192";
  using qkv_dgrad = bulk<2, 2, false>;
  using qkv_wgrad = bulk<24, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<2, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #7.
struct userbuffers_bf16_b200_h16384_tp4_cp2_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_b200_h16384_tp4_cp2_mbs1_seqlen8192";
  using qkv_dgrad = bulk<8, 2, false>;
  using qkv_wgrad = bulk<24, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<2, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = pipeline<32, 2, 4, true, false, false>;
  using fc2_fprop = pipeline<8, 2, 4, true, false, false>;
};

/// Upstream preset #8.
struct userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192";
  using qkv_dgrad = bulk<8, 2, false>;
  using qkv_wgrad = bulk<32, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<8, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #9.
struct userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora {
  static constexpr std::string_view preset_name = "userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora";
  using qkv_dgrad = bulk<2, 2, false>;
  using fc1_dgrad = pipeline<16, 2, 4, true, true, false>;
  using qkv_fprop = ring_exchange<1, 1, true>;
  using proj_dgrad = ring_exchange<1, 1, true>;
  using fc1_fprop = ring_exchange<1, 1, true>;
  using fc2_dgrad = ring_exchange<1, 1, true>;
  using proj_fprop = ring_exchange<1, 2, true, false, true, false>;
  using fc2_fprop = ring_exchange<1, 2, true, false, true, false>;
};

/// Upstream preset #10.
struct userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora {
  static constexpr std::string_view preset_name = "userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora";
  using qkv_dgrad = bulk<2, 2, false>;
  using fc1_dgrad = pipeline<16, 2, 4, true, true, false>;
  using qkv_fprop = ring_exchange<1, 1, false, true, false, false>;
  using proj_dgrad = ring_exchange<1, 1, false, true, false, false>;
  using fc1_fprop = ring_exchange<1, 1, false, true, false, false>;
  using fc2_dgrad = ring_exchange<1, 1, false, true, false, false>;
  using proj_fprop = pipeline<32, 2, 4, true, true, false>;
  using fc2_fprop = pipeline<16, 2, 4, true, true, false>;
};

/// Upstream preset #11.
struct userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048";
  using qkv_dgrad = bulk<8, 2, false>;
  using qkv_wgrad = bulk<16, 2, false>;
  using fc1_dgrad = bulk<4, 2, false>;
  using fc1_wgrad = bulk<16, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = pipeline<16, 2, 4, true, false, false>;
  using fc2_fprop = pipeline<24, 2, 4, true, false, false>;
};

/// Upstream preset #12.
struct userbuffers_fp8_h100_h6144_tp2_mbs2_seqlen2048 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_h100_h6144_tp2_mbs2_seqlen2048";
  using qkv_dgrad = bulk<8, 2, false>;
  using qkv_wgrad = bulk<16, 2, false>;
  using fc1_dgrad = bulk<4, 2, false>;
  using fc1_wgrad = bulk<16, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = pipeline<16, 2, 4, true, true, false>;
  using fc2_fprop = pipeline<24, 2, 4, true, true, false>;
};

/// Upstream preset #13.
struct userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048";
  using qkv_dgrad = bulk<4, 2, false>;
  using qkv_wgrad = bulk<4, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<4, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = pipeline<24, 2, 4, true, false, false>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #14.
struct userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048";
  using qkv_dgrad = bulk<4, 2, false>;
  using qkv_wgrad = bulk<4, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<4, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #15.
struct userbuffers_bf16_b200_h12288_tp4_mbs1_seqlen2048 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_b200_h12288_tp4_mbs1_seqlen2048";
  using qkv_dgrad = bulk<4, 2, false>;
  using qkv_wgrad = bulk<16, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<8, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #16.
struct userbuffers_fp8_b200_h12288_tp4_mbs1_seqlen2048 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_b200_h12288_tp4_mbs1_seqlen2048";
  using qkv_dgrad = bulk<4, 2, false>;
  using qkv_wgrad = bulk<16, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<8, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #17.
struct userbuffers_bf16_b200_h6144_tp2_mbs1_seqlen4096 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_b200_h6144_tp2_mbs1_seqlen4096";
  using qkv_dgrad = bulk<8, 2, false>;
  using qkv_wgrad = bulk<32, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<8, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

/// Upstream preset #18.
struct userbuffers_bf16_b200_h18432_tp8_mbs1_seqlen4096 {
  static constexpr std::string_view preset_name = "userbuffers_bf16_b200_h18432_tp8_mbs1_seqlen4096";
  using qkv_dgrad = bulk<8, 2, false>;
  using qkv_wgrad = bulk<32, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<8, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = pipeline<24, 2, 4, true, false, false>;
};

/// Upstream preset #19.
struct userbuffers_fp8_b200_h18432_tp8_mbs1_seqlen4096 {
  static constexpr std::string_view preset_name = "userbuffers_fp8_b200_h18432_tp8_mbs1_seqlen4096";
  using qkv_dgrad = bulk<8, 2, false>;
  using qkv_wgrad = bulk<32, 2, false>;
  using fc1_dgrad = bulk<2, 2, false>;
  using fc1_wgrad = bulk<8, 2, false>;
  using qkv_fprop = ring_exchange<>;
  using proj_dgrad = ring_exchange<>;
  using fc1_fprop = ring_exchange<>;
  using fc2_dgrad = ring_exchange<>;
  using proj_fprop = ring_exchange<1, 1, true>;
  using fc2_fprop = ring_exchange<1, 1, true>;
};

}  // namespace overlap::ub
