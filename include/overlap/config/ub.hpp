#pragma once
/// @file
/// TP userbuffer slot values (`ub::bulk`, `ub::ring_exchange`, `ub::pipeline`) and the option
/// `tp_comm_overlap_cfg<P>`, where P is an upstream preset (<overlap/config/ub_presets.hpp>) or a
/// custom struct whose member type aliases are named after the GEMM slots it configures.

#include <concepts>

#include <overlap/config/option.hpp>
#include <overlap/settings/ub.hpp>

namespace overlap {
namespace ub {

/// Bulk overlap: the collective runs on a side stream next to an independent GEMM.
/// Defaults are TE-6's. `AtomicGemm` has no effect here (TE-4).
template <int NumSm = default_knobs(method::bulk).num_sm, int CgaSize = default_knobs(method::bulk).cga_size,
          bool SetSmMargin = false, bool AtomicGemm = false>
struct bulk {
  static constexpr slot value{.method = method::bulk,
                              .num_sm = NumSm,
                              .cga_size = CgaSize,
                              .set_sm_margin = SetSmMargin,
                              .atomic_gemm = AtomicGemm};
};

/// Ring-exchange overlap: chunk i+1 moves while chunk i is multiplied. Defaults are TE-6's.
/// `AtomicGemm` needs fp8 (TE-3) and the same choice on the paired slot (TE-5).
template <int NumSm = default_knobs(method::ring_exchange).num_sm,
          int CgaSize = default_knobs(method::ring_exchange).cga_size, bool SetSmMargin = false, bool Aggregate = false,
          bool Fp8Buf = false, bool AtomicGemm = false>
struct ring_exchange {
  static constexpr slot value{.method = method::ring_exchange,
                              .num_sm = NumSm,
                              .cga_size = CgaSize,
                              .set_sm_margin = SetSmMargin,
                              .aggregate = Aggregate,
                              .fp8_buf = Fp8Buf,
                              .atomic_gemm = AtomicGemm};
};

/// Pipelined split: the GEMM is cut into `NumSplits` chunks, each reduce-scattered as it completes.
/// Only on reduce-scatter slots (TE-1). Defaults are TE-6's.
template <int NumSm = default_knobs(method::pipeline).num_sm, int CgaSize = default_knobs(method::pipeline).cga_size,
          int NumSplits = default_knobs(method::pipeline).num_splits, bool SetSmMargin = false, bool Fp8Buf = false,
          bool AtomicGemm = false>
struct pipeline {
  static constexpr slot value{.method = method::pipeline,
                              .num_sm = NumSm,
                              .cga_size = CgaSize,
                              .num_splits = NumSplits,
                              .set_sm_margin = SetSmMargin,
                              .fp8_buf = Fp8Buf,
                              .atomic_gemm = AtomicGemm};
};

/// `P` declares at least one GEMM slot, and every slot it declares is a `ub::bulk`,
/// `ub::ring_exchange` or `ub::pipeline` (a struct whose aliases are all misspelled is no config).
template <class P>
inline constexpr bool is_user_config = (0
#define OVERLAP_UB_COUNT(name)     \
  +int {                           \
    requires { typename P::name; } \
  }
                                        OVERLAP_UB_SLOTS(OVERLAP_UB_COUNT)
#undef OVERLAP_UB_COUNT
                                            ) > 0
#define OVERLAP_UB_WELL_FORMED(name)                     \
  &&(                                                    \
      !requires { typename P::name; } ||                 \
      requires {                                         \
        { P::name::value } -> std::convertible_to<slot>; \
      })
                                       OVERLAP_UB_SLOTS(OVERLAP_UB_WELL_FORMED)
#undef OVERLAP_UB_WELL_FORMED
    ;

/// The slots that `P` declares, and the preset's name if it is one.
template <class P>
constexpr user_config user_config_of() {
  user_config out{};
#define OVERLAP_UB_READ(name)                     \
  if constexpr (requires { typename P::name; }) { \
    out.slots.name = P::name::value;              \
  }
  OVERLAP_UB_SLOTS(OVERLAP_UB_READ)
#undef OVERLAP_UB_READ
  if constexpr (requires { P::preset_name; }) out.preset_name = P::preset_name;
  return out;
}

}  // namespace ub

/// The TP userbuffer configuration: an upstream preset such as
/// `ub::userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048`, or a custom struct with member aliases
/// named after the slots (`qkv_dgrad qkv_wgrad fc1_dgrad fc1_wgrad qkv_fprop proj_dgrad fc1_fprop
/// fc2_dgrad proj_fprop fc2_fprop`). Undeclared slots take TE-6's defaults. Needs tp_comm_overlap
/// (TP-17); slots are checked by TE-1 ... TE-7; a preset tuned for another run gives note TP-18.
/// With a `P` that declares no slot, or a slot of another type, it is not an option (OPT-2).
template <class P>
struct tp_comm_overlap_cfg {};

template <class P>
requires ub::is_user_config<P>
struct tp_comm_overlap_cfg<P> {
  using overlap_field = detail::field_key<&settings::tp_comm_overlap_cfg>;
  static constexpr void apply(settings& s) { s.tp_comm_overlap_cfg = ub::user_config_of<P>(); }
};

}  // namespace overlap
