#pragma once
/// @file
/// What an op is and where it sits in the step: its typed key. Backends, the measured costs and
/// the trainer's bindings match keys; names for people are derived from them (`display_name`) and
/// never parsed back. A key pattern (`key_pattern`) matches keys with wildcards, for example
/// every `fc1_fprop` of any layer and micro-batch.

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <overlap/program/family.hpp>

namespace overlap::schedule {

/// How an op runs: the mechanism the backends implement.
enum class op_kind : std::uint8_t {
  compute,     ///< the trainer's kernel for the op's type
  collective,  ///< `coll` on `comm`, `bytes` per rank
  send,        ///< `bytes` to communicator rank `peer` of `comm`
  recv,        ///< `bytes` from communicator rank `peer` of `comm`
  record,      ///< records `event` on `stream`
  wait,        ///< `stream` waits for the latest record of `event`
  host_sync    ///< the host waits until everything issued before it has finished; with an
               ///< `event`, until that event's latest record has (cudaEventSynchronize)
};

enum class collective : std::uint8_t { all_gather, reduce_scatter, all_reduce, all_to_all };

/// Collectives, sends and receives: the ops that meet other ranks.
constexpr bool is_communication(op_kind k) {
  return k == op_kind::collective || k == op_kind::send || k == op_kind::recv;
}

/// X(type, kind, fam): every op type the generators emit, the op kind it runs as and its
/// overlap family. Compute types are the pieces of the model a trainer supplies kernels for (the
/// ten TransformerEngine userbuffer GEMM slots among them); communication types are what the
/// library issues on NCCL unless the trainer binds its own implementation.
#define OVERLAP_OP_TYPES(X)                    \
  X(embedding_fprop, compute, none)            \
  X(embedding_bprop, compute, none)            \
  X(layernorm_fprop, compute, none)            \
  X(layernorm_bprop, compute, none)            \
  X(qkv_fprop, compute, none)                  \
  X(qkv_dgrad, compute, none)                  \
  X(qkv_wgrad, compute, none)                  \
  X(attn_core_fprop, compute, none)            \
  X(attn_core_bprop, compute, none)            \
  X(proj_fprop, compute, none)                 \
  X(proj_dgrad, compute, none)                 \
  X(proj_wgrad, compute, none)                 \
  X(fc1_fprop, compute, none)                  \
  X(fc1_dgrad, compute, none)                  \
  X(fc1_wgrad, compute, none)                  \
  X(fc2_fprop, compute, none)                  \
  X(fc2_dgrad, compute, none)                  \
  X(fc2_wgrad, compute, none)                  \
  X(tp_ring_reduce, compute, none)             \
  X(router_fprop, compute, none)               \
  X(router_bprop, compute, none)               \
  X(permute_fprop, compute, none)              \
  X(permute_bprop, compute, none)              \
  X(unpermute_fprop, compute, none)            \
  X(unpermute_bprop, compute, none)            \
  X(experts_fprop, compute, none)              \
  X(experts_dgrad, compute, none)              \
  X(experts_wgrad, compute, none)              \
  X(shared_experts_fprop, compute, none)       \
  X(shared_experts_dgrad, compute, none)       \
  X(shared_experts_wgrad, compute, none)       \
  X(lm_head_fprop, compute, none)              \
  X(lm_head_bprop, compute, none)              \
  X(mtp_proj_fprop, compute, none)             \
  X(mtp_proj_dgrad, compute, none)             \
  X(mtp_proj_wgrad, compute, none)             \
  X(optimizer_step, compute, none)             \
  X(tp_all_gather, collective, tp)             \
  X(tp_reduce_scatter, collective, tp)         \
  X(tp_ring_send, send, tp)                    \
  X(tp_ring_recv, recv, tp)                    \
  X(ep_dispatch, collective, ep)               \
  X(ep_combine, collective, ep)                \
  X(ep_dispatch_bprop, collective, ep)         \
  X(ep_combine_bprop, collective, ep)          \
  X(dp_grad_reduce, collective, dp)            \
  X(dp_param_gather, collective, dp)           \
  X(embedding_grad_all_reduce, collective, dp) \
  X(pp_send_forward, send, pp)                 \
  X(pp_recv_forward, recv, pp)                 \
  X(pp_send_backward, send, pp)                \
  X(pp_recv_backward, recv, pp)                \
  X(event_record, record, none)                \
  X(event_wait, wait, none)                    \
  X(host_sync, host_sync, none)                \
  X(moe_token_count_sync, host_sync, none)

/// What an op is. `none` marks an untyped op of a hand-written program: it runs as its op kind
/// says and binds like any other type.
enum class op_type : std::uint8_t {
  none,
#define OVERLAP_OP_TYPE_ENUM(type, kind, fam) type,
  OVERLAP_OP_TYPES(OVERLAP_OP_TYPE_ENUM)
#undef OVERLAP_OP_TYPE_ENUM
};

/// How many values `op_type` has, `none` included.
inline constexpr std::size_t op_type_count = 1
#define OVERLAP_OP_TYPE_COUNT(type, kind, fam) +1
    OVERLAP_OP_TYPES(OVERLAP_OP_TYPE_COUNT)
#undef OVERLAP_OP_TYPE_COUNT
    ;

namespace detail {
struct op_type_info {
  std::string_view name;
  op_kind kind;
  schedule::family family;
};
inline constexpr std::array<op_type_info, op_type_count> op_types{{{"none", op_kind::compute, family::none},
#define OVERLAP_OP_TYPE_INFO(type, kind, fam) {#type, op_kind::kind, family::fam},
                                                                   OVERLAP_OP_TYPES(OVERLAP_OP_TYPE_INFO)
#undef OVERLAP_OP_TYPE_INFO
}};
constexpr const op_type_info& info(op_type t) {
  const auto i = static_cast<std::size_t>(t);
  return op_types[i < op_type_count ? i : 0];
}
}  // namespace detail

constexpr bool is_valid(op_type t) { return static_cast<std::size_t>(t) < op_type_count; }
constexpr std::string_view to_string(op_type t) {
  return is_valid(t) ? detail::info(t).name : std::string_view("invalid op type");
}
/// The op kind an op of type `t` runs as (`none`: any kind).
constexpr op_kind kind_of(op_type t) { return detail::info(t).kind; }
/// The family whose communication an op of type `t` is (none for compute).
constexpr family family_of(op_type t) { return detail::info(t).family; }
/// Whether `t` is one of the twelve GEMMs of a tensor-parallel layer (qkv, proj, fc1 and fc2,
/// forward, input and weight gradient) or of a multi-token-prediction layer's projection: what a
/// TP communication op's `slot` may name.
constexpr bool is_tp_gemm(op_type t) {
  switch (t) {
    case op_type::mtp_proj_fprop:
    case op_type::mtp_proj_dgrad:
    case op_type::mtp_proj_wgrad:
    case op_type::qkv_fprop:
    case op_type::qkv_dgrad:
    case op_type::qkv_wgrad:
    case op_type::proj_fprop:
    case op_type::proj_dgrad:
    case op_type::proj_wgrad:
    case op_type::fc1_fprop:
    case op_type::fc1_dgrad:
    case op_type::fc1_wgrad:
    case op_type::fc2_fprop:
    case op_type::fc2_dgrad:
    case op_type::fc2_wgrad: return true;
    default: return false;
  }
}
/// Whether an op of type `t` is a GEMM of Transformer Engine's linear modules, which its fp8 and
/// fp4 recipes quantize: the TP slots, the routed and shared experts, MTP's projection. Core
/// attention, the router, the output layer (a Megatron ColumnParallelLinear) and the memory-bound
/// kernels keep the step's precision.
constexpr bool runs_quantized(op_type t) {
  switch (t) {
    case op_type::experts_fprop:
    case op_type::experts_dgrad:
    case op_type::experts_wgrad:
    case op_type::shared_experts_fprop:
    case op_type::shared_experts_dgrad:
    case op_type::shared_experts_wgrad: return true;
    default: return is_tp_gemm(t);
  }
}
/// The type called `name`, if any.
constexpr std::optional<op_type> op_type_named(std::string_view name) {
  for (std::size_t i = 0; i < op_type_count; ++i)
    if (detail::op_types[i].name == name) return static_cast<op_type>(i);
  return std::nullopt;
}

/// A set of op types, usable at compile time (the types a config's schedule emits).
struct op_type_set {
  std::array<bool, op_type_count> has{};
  constexpr op_type_set& add(op_type t) {
    has[static_cast<std::size_t>(t)] = true;
    return *this;
  }
  constexpr bool contains(op_type t) const { return is_valid(t) && has[static_cast<std::size_t>(t)]; }
  friend constexpr bool operator==(const op_type_set&, const op_type_set&) = default;
};

/// Where an op (or a buffer) sits in the step; -1 where a coordinate does not apply.
struct location {
  int layer = -1;  ///< global transformer layer
  int micro_batch = -1;
  int chunk = -1;   ///< model chunk of the stage (virtual pipeline); 0 without vpp
  int bucket = -1;  ///< data-parallel bucket within its chunk and parameter group
  int split = -1;   ///< ring step or pipelined split of a TP GEMM, part of a reduction
  friend constexpr bool operator==(const location&, const location&) = default;
};

/// The typed identity of an op.
struct op_key {
  op_type type = op_type::none;
  /// TP communication: the GEMM slot it serves (`qkv_fprop`, `fc2_dgrad`, ...).
  op_type slot = op_type::none;
  location at{};
  bool expert = false;     ///< DP: the expert parameters' group (MoE), not the dense one
  bool recompute = false;  ///< a forward recomputed before its backward (activation recompute)
  friend constexpr bool operator==(const op_key&, const op_key&) = default;
};

namespace detail {
using coordinate = int location::*;
struct key_field {
  std::string_view prefix;
  coordinate member;
};
/// The coordinates in display order, with the prefix each is written with.
inline constexpr std::array<key_field, 5> key_fields{{{"l", &location::layer},
                                                      {"mb", &location::micro_batch},
                                                      {"c", &location::chunk},
                                                      {"b", &location::bucket},
                                                      {"s", &location::split}}};
}  // namespace detail

/// Appends " l3 mb0 c1" for the coordinates of `at` that apply.
inline void append_coordinates(std::string& text, const location& at) {
  for (const auto& f : detail::key_fields)
    if (at.*f.member >= 0) ((text += ' ') += f.prefix) += std::to_string(at.*f.member);
}

/// A name for people: the type, the slot, then each coordinate that applies, e.g.
/// "tp_all_gather qkv_fprop l3 mb0 c1" or "dp_grad_reduce c0 b2 expert".
inline std::string display_name(const op_key& k) {
  std::string text(to_string(k.type));
  if (k.slot != op_type::none) (text += ' ') += to_string(k.slot);
  append_coordinates(text, k.at);
  if (k.expert) text += " expert";
  if (k.recompute) text += " recompute";
  return text;
}

/// A set of keys: a type (or any), and optionally a slot, coordinates and flags; what a pattern
/// leaves out matches anything. Written like a display name, with `*` for any type and for any
/// value of a coordinate: "fc1_fprop" (every fc1_fprop), "fc1_fprop l3" (those of layer 3),
/// "tp_all_gather qkv_fprop mb*", "* l0".
struct key_pattern {
  std::optional<op_type> type{};
  std::optional<op_type> slot{};
  std::array<std::optional<int>, 5> at{};  ///< in `detail::key_fields` order
  std::optional<bool> expert{}, recompute{};

  bool matches(const op_key& k) const {
    if (type && *type != k.type) return false;
    if (slot && *slot != k.slot) return false;
    for (std::size_t i = 0; i < at.size(); ++i)
      if (at[i] && *at[i] != k.at.*detail::key_fields[i].member) return false;
    if (expert && *expert != k.expert) return false;
    return !recompute || *recompute == k.recompute;
  }
  /// How many parts the pattern fixes: the more, the more specific.
  int specificity() const {
    int n = type.has_value() + slot.has_value() + expert.has_value() + recompute.has_value();
    for (const auto& v : at) n += v.has_value();
    return n;
  }
};

namespace detail {
/// `text` with each control character written as \xHH: a message that quotes input stays whole
/// (a NUL would end it where it is read as a C string).
inline std::string printable(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f)
      out += c;
    else
      ((out += "\\x") += hex[u >> 4]) += hex[u & 15];
  }
  return out;
}
}  // namespace detail

/// Reads a pattern; on failure returns nullopt and says why in `error` (control characters of
/// the text written as \xHH).
inline std::optional<key_pattern> parse_key_pattern(std::string_view text, std::string& error) {
  key_pattern p;
  bool first = true;
  std::size_t pos = 0;
  const auto fail = [&](std::string why) {
    error = detail::printable(((std::string("\"") += text) += "\": ") += why);
    return std::nullopt;
  };
  while (pos < text.size()) {
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    const std::string_view word = text.substr(pos, end - pos);
    pos = end;
    if (first) {
      first = false;
      if (word == "*") continue;
      const auto t = op_type_named(word);
      if (!t) return fail(std::string("unknown op type '").append(word) + "'");
      p.type = t;
      continue;
    }
    if (word == "expert") {
      p.expert = true;
      continue;
    }
    if (word == "recompute") {
      p.recompute = true;
      continue;
    }
    if (const auto slot = op_type_named(word)) {
      if (p.slot) return fail("two slots");
      p.slot = slot;
      continue;
    }
    bool known = false;
    // A coordinate: its prefix, then a number or '*' ("mb3" is not "b" followed by "3": that
    // prefix does not start the word).
    for (std::size_t i = 0; i < detail::key_fields.size() && !known; ++i) {
      const std::string_view prefix = detail::key_fields[i].prefix;
      if (word.size() <= prefix.size() || word.substr(0, prefix.size()) != prefix) continue;
      const std::string_view value = word.substr(prefix.size());
      if (value == "*") {
        known = true;
        continue;
      }
      int v = -1;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc{} || ptr != value.data() + value.size()) continue;
      if (v < 0) return fail(std::string("negative coordinate '").append(word) + "'");
      if (p.at[i]) return fail(std::string("coordinate '").append(prefix) + "' given twice");
      p.at[i] = v;
      known = true;
    }
    if (!known)
      return fail(std::string("'").append(word) +
                  "' is not an op type, a coordinate (l, mb, c, b, s followed by a number or *), "
                  "'expert' or 'recompute'");
  }
  if (first) return fail("empty pattern");
  return p;
}

}  // namespace overlap::schedule
