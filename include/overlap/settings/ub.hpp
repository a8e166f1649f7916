#pragma once
/// @file
/// Plain values of the TP userbuffer configuration: one `ub::slot` per GEMM slot.

#include <cstddef>
#include <optional>
#include <string_view>

#include <overlap/settings/enums.hpp>

/// The ten GEMM slots of a transformer layer in upstream's declaration order; `X(name)` per slot.
/// The single list from which slot fields, ids and type detection are generated.
#define OVERLAP_UB_SLOTS(X) \
  X(qkv_dgrad)              \
  X(qkv_wgrad)              \
  X(fc1_dgrad)              \
  X(fc1_wgrad)              \
  X(qkv_fprop)              \
  X(proj_dgrad)             \
  X(fc1_fprop)              \
  X(fc2_dgrad)              \
  X(proj_fprop)             \
  X(fc2_fprop)

namespace overlap::ub {

/// The method and knobs of one GEMM slot. Knobs a method does not use are 0/false.
struct slot {
  ub::method method = ub::method::none;
  int num_sm = 0;
  int cga_size = 0;
  int num_splits = 0;
  bool set_sm_margin = false;
  bool aggregate = false;
  bool fp8_buf = false;
  bool atomic_gemm = false;
  friend constexpr bool operator==(const slot&, const slot&) = default;
};

/// Transformer Engine's default knobs for a method (rule TE-6): `num_sm` 1 for ring-exchange
/// else 16, `cga_size` 1 for ring-exchange else 2, `num_splits` 4 for pipeline else 0.
constexpr slot default_knobs(ub::method m) {
  const bool ring = m == ub::method::ring_exchange;
  return slot{
      .method = m, .num_sm = ring ? 1 : 16, .cga_size = ring ? 1 : 2, .num_splits = m == ub::method::pipeline ? 4 : 0};
}

/// Identifies a GEMM slot.
enum class slot_id : std::uint8_t {
#define OVERLAP_UB_ID(name) name,
  OVERLAP_UB_SLOTS(OVERLAP_UB_ID)
#undef OVERLAP_UB_ID
};

inline constexpr slot_id all_slots[] = {
#define OVERLAP_UB_ID(name) slot_id::name,
    OVERLAP_UB_SLOTS(OVERLAP_UB_ID)
#undef OVERLAP_UB_ID
};

constexpr std::string_view to_string(slot_id id) {
  switch (id) {
#define OVERLAP_UB_NAME(name) \
  case slot_id::name: return #name;
    OVERLAP_UB_SLOTS(OVERLAP_UB_NAME)
#undef OVERLAP_UB_NAME
  }
  return "?";
}

/// The all-gather slots: `pipeline` is not available there (TE-1).
constexpr bool is_all_gather(slot_id id) {
  return id == slot_id::qkv_fprop || id == slot_id::fc1_fprop || id == slot_id::proj_dgrad || id == slot_id::fc2_dgrad;
}

/// Transformer Engine's default method for a slot that a configuration does not declare (TE-6).
constexpr ub::method default_method(slot_id id) {
  if (is_all_gather(id)) return ub::method::ring_exchange;
  if (id == slot_id::proj_fprop || id == slot_id::fc2_fprop) return ub::method::pipeline;
  return ub::method::bulk;
}

/// One value per slot: `std::optional<slot>` for what a user declares, `slot` once resolved.
template <class T>
struct per_slot {
#define OVERLAP_UB_FIELD(name) T name{};
  OVERLAP_UB_SLOTS(OVERLAP_UB_FIELD)
#undef OVERLAP_UB_FIELD

  constexpr const T& operator[](slot_id id) const { return const_cast<per_slot&>(*this)[id]; }
  constexpr T& operator[](slot_id id) {
    switch (id) {
#define OVERLAP_UB_GET(name) \
  case slot_id::name: return name;
      OVERLAP_UB_SLOTS(OVERLAP_UB_GET)
#undef OVERLAP_UB_GET
    }
    return qkv_dgrad;  // unreachable for a valid id; keeps run-time garbage defined
  }
  friend constexpr bool operator==(const per_slot&, const per_slot&) = default;
};

/// What a `tp_comm_overlap_cfg<P>` declares: the slots P names (absent ones stay empty) and,
/// for one of the upstream presets, its name (empty for a custom type).
struct user_config {
  per_slot<std::optional<slot>> slots{};
  std::string_view preset_name{};
  friend constexpr bool operator==(const user_config&, const user_config&) = default;
};

/// The resolved configuration: every slot with its final method and knobs.
using resolved_config = per_slot<slot>;

}  // namespace overlap::ub
