#pragma once
/// @file
/// Binding the trainer's callables to op types. A program names what to run by op type (the
/// key's `type`), never by a string, so a trainer writes one kernel per type, and the key passed
/// to it says which layer, micro-batch, chunk or split this op is:
///
/// ```
/// r.kernels = cuda::kernels_for<cfg::schedule>(
///     cuda::on<op_type::qkv_fprop, op_type::fc1_fprop>(gemm_forward),
///     cuda::on<op_type::attn_core_fprop>(flash_forward), ...);
/// ```
///
/// `kernels_for<Schedule>` checks at compile time that every compute type `Schedule::op_types`
/// can contain has a kernel, and names each missing type in its own error. Host only.

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <overlap/program/op_key.hpp>

namespace overlap::cuda {

using schedule::op_key;
using schedule::op_type;

/// One callable per op type, looked up when a program is compiled, never per issued op. An
/// empty entry means "not bound".
template <class Fn>
class op_type_table;

/// The callable `kernel` for the op types `Types` (what `on<...>` returns).
template <class F, op_type... Types>
struct kernel_binding {
  F kernel;
  static constexpr schedule::op_type_set types = [] {
    schedule::op_type_set s;
    (s.add(Types), ...);
    return s;
  }();
  /// How many times each type is named here (a type given twice is bound twice).
  static constexpr std::size_t count(op_type t) { return ((Types == t ? 1u : 0u) + ... + 0u); }
};

/// Binds `kernel` to the compute op types `Types`: it is called as `kernel(key, stream)` for
/// every op of those types, with the op's key and the CUDA stream the program assigns.
template <op_type... Types, class F>
constexpr kernel_binding<std::decay_t<F>, Types...> on(F&& kernel) {
  static_assert(sizeof...(Types) > 0,
                "[EXEC-BIND] cuda::on<>() names no op type; write cuda::on<op_type::fc1_fprop>(f)");
  return {std::forward<F>(kernel)};
}

/// The checked bindings `kernels_for` returns; they convert to the resources' kernel table.
template <class... Bindings>
struct kernel_bindings {
  std::tuple<Bindings...> bound;
};

namespace detail {
template <op_type T>
inline constexpr bool binding_error = false;
/// `t`, as a value that depends on `Context`: a discarded `if constexpr` branch then instantiates
/// nothing.
template <class Context>
constexpr op_type dependent(op_type t) {
  return t;
}
}  // namespace detail

// One of these is instantiated per offending op type, so the compiler prints the type in the
// "In instantiation of" line right above the message, and each type gets exactly one error.

/// A compute type that the schedule can emit has no kernel.
template <op_type T>
struct kernel_missing_for {
  static_assert(detail::binding_error<T>,
                "[EXEC-BIND] a compute op type of the schedule has no kernel; add "
                "cuda::on<op_type::...>(...) for the type named in 'kernel_missing_for<...>'");
};
/// A type bound by two `on<...>` (or named twice in one).
template <op_type T>
struct kernel_bound_twice {
  static_assert(detail::binding_error<T>,
                "[EXEC-BIND] an op type has two kernels; keep one cuda::on<...> for the type named "
                "in 'kernel_bound_twice<...>'");
};
/// A communication type bound as a kernel: the library issues it (NCCL) unless overridden.
template <op_type T>
struct kernel_for_communication {
  static_assert(detail::binding_error<T>,
                "[EXEC-BIND] cuda::on binds kernels to compute op types; bind the communication "
                "type named in 'kernel_for_communication<...>' in resources.comm_overrides instead");
};

/// The kernel table for a program of `Schedule` (a config type's `cfg::schedule`, or any type
/// with a `static constexpr schedule::op_type_set op_types`): fails to compile, naming each type,
/// when a compute type `Schedule::op_types` contains has no kernel, when a type is bound twice,
/// or when a communication type is bound as a kernel. Types the schedule never emits may be
/// bound (one table can serve several configs).
template <class Schedule, class... Bindings>
constexpr kernel_bindings<Bindings...> kernels_for(Bindings... bindings) {
  constexpr schedule::op_type_set emitted = Schedule::op_types;
  constexpr auto times_bound = [](op_type t) { return (Bindings::count(t) + ... + 0u); };
  // The op type table itself is the list of types to look at: one `if constexpr` per type keeps
  // the diagnostic one instantiation deep.
#define OVERLAP_CHECK_BINDING(type, kind, fam)                                                                       \
  if constexpr (schedule::kind_of(op_type::type) == schedule::op_kind::compute && emitted.contains(op_type::type) && \
                times_bound(op_type::type) == 0)                                                                     \
    static_cast<void>(sizeof(kernel_missing_for<detail::dependent<Schedule>(op_type::type)>));                       \
  if constexpr (times_bound(op_type::type) > 1)                                                                      \
    static_cast<void>(sizeof(kernel_bound_twice<detail::dependent<Schedule>(op_type::type)>));                       \
  if constexpr (schedule::kind_of(op_type::type) != schedule::op_kind::compute && times_bound(op_type::type) > 0)    \
    static_cast<void>(sizeof(kernel_for_communication<detail::dependent<Schedule>(op_type::type)>));
  OVERLAP_OP_TYPES(OVERLAP_CHECK_BINDING)
#undef OVERLAP_CHECK_BINDING
  return {{std::move(bindings)...}};
}

template <class Fn>
class op_type_table {
 public:
  op_type_table() = default;
  /// The table `kernels_for` checked: each binding's callable under each of its types.
  template <class... Bindings>
  op_type_table(kernel_bindings<Bindings...> bindings)  // NOLINT: converts on purpose
      : op_type_table(bindings, std::index_sequence_for<Bindings...>{}) {}

  Fn& operator[](op_type t) { return entries_.at(static_cast<std::size_t>(t)); }
  const Fn& operator[](op_type t) const { return entries_.at(static_cast<std::size_t>(t)); }
  /// Whether a callable is bound to `t` (an empty `std::function` is not).
  bool contains(op_type t) const {
    return schedule::is_valid(t) && static_cast<bool>(entries_[static_cast<std::size_t>(t)]);
  }

 private:
  template <class... Bindings, std::size_t... I>
  op_type_table(kernel_bindings<Bindings...>& bindings, std::index_sequence<I...>) {
    (assign(std::get<I>(bindings.bound)), ...);
  }
  template <class F, op_type... Types>
  void assign(kernel_binding<F, Types...>& b) {
    constexpr bool callable = std::is_constructible_v<Fn, F&>;
    static_assert(callable, "[EXEC-BIND] a kernel must be callable as kernel(const schedule::op_key&, stream)");
    if constexpr (callable) ((entries_[static_cast<std::size_t>(Types)] = b.kernel), ...);
  }

  std::array<Fn, schedule::op_type_count> entries_{};
};

}  // namespace overlap::cuda
