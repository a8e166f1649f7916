#pragma once
/// @file
/// The enumerations that option values and settings are made of. Each enum names upstream's
/// string literals; `enum_info<E>` gives their count and spellings for printing and for
/// checking run-time values that may come from outside the type system.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace overlap {

/// `moe_token_dispatcher_type` (upstream default: allgather).
enum class dispatcher : std::uint8_t { allgather, alltoall, flex };
/// `moe_flex_dispatcher_backend`.
enum class flex_backend : std::uint8_t { deepep, hybridep, ncclep };
/// `precision`: the model's parameter dtype (upstream default fp32).
enum class dtype : std::uint8_t { fp32, fp16, bf16 };
/// `recompute_granularity`.
enum class granularity : std::uint8_t { full, selective };
/// `recompute_method`.
enum class recompute : std::uint8_t { uniform, block };
/// `cuda_graph_impl` (upstream default none).
enum class graph_impl : std::uint8_t { none, local, transformer_engine };
/// `gpu`: the declared GPU model; undeclared counts as pre-Blackwell wherever it matters.
enum class gpu_model : std::uint8_t { a100, h100, h200, b200, b300, gb200, gb300 };
/// `tp_comm_bootstrap_backend` (upstream default nccl).
enum class bootstrap : std::uint8_t { nccl, mpi, gloo };
/// An entry of `recompute_modules`.
enum class module : std::uint8_t { core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts };
/// An entry of `cuda_graph_modules` (an empty list captures the whole layer).
enum class graph_module : std::uint8_t { attn, mlp, moe, moe_router, moe_preprocess, mamba };

namespace ub {
/// How one TP userbuffer GEMM slot overlaps its communication; `none` when TP overlap is off.
enum class method : std::uint8_t { none, bulk, ring_exchange, pipeline };
}  // namespace ub

/// Spellings of an enum's values, in declaration order.
template <class E>
struct enum_info;

#define OVERLAP_ENUM_INFO(E, ...)                                          \
  template <>                                                              \
  struct enum_info<E> {                                                    \
    static constexpr std::string_view names[] = {__VA_ARGS__};             \
    static constexpr std::size_t count = sizeof(names) / sizeof(names[0]); \
  };

OVERLAP_ENUM_INFO(dispatcher, "allgather", "alltoall", "flex")
OVERLAP_ENUM_INFO(flex_backend, "deepep", "hybridep", "ncclep")
OVERLAP_ENUM_INFO(dtype, "fp32", "fp16", "bf16")
OVERLAP_ENUM_INFO(granularity, "full", "selective")
OVERLAP_ENUM_INFO(recompute, "uniform", "block")
OVERLAP_ENUM_INFO(graph_impl, "none", "local", "transformer_engine")
OVERLAP_ENUM_INFO(gpu_model, "a100", "h100", "h200", "b200", "b300", "gb200", "gb300")
OVERLAP_ENUM_INFO(bootstrap, "nccl", "mpi", "gloo")
OVERLAP_ENUM_INFO(module, "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
OVERLAP_ENUM_INFO(graph_module, "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba")
OVERLAP_ENUM_INFO(ub::method, "none", "bulk", "ring_exchange", "pipeline")

#undef OVERLAP_ENUM_INFO

/// True when `e` is one of the declared enumerators (run-time values may be anything).
template <class E>
constexpr bool is_enumerator(E e) {
  return static_cast<std::size_t>(e) < enum_info<E>::count;
}

/// The upstream spelling of `e`, or "?" for a value that names no enumerator.
template <class E>
constexpr std::string_view to_string(E e) {
  return is_enumerator(e) ? enum_info<E>::names[static_cast<std::size_t>(e)] : "?";
}

}  // namespace overlap
