#pragma once
/// @file
/// The field lists of the plain values, written once: Boost.Hana struct reflection on
/// `resolved_settings`, `ub::slot` and `version` (and, in reflect_settings.hpp, `settings`), and
/// `for_each_field` over them.
/// The printer (print.hpp) and the overlap-plan reader and writer walk these lists, so a field is
/// named in its struct and here, nowhere else. Not included by <overlap/overlap.hpp>: the
/// umbrella's compile time does not pay for it.

#include <cstddef>
#include <string_view>
#include <type_traits>

#include <boost/hana/accessors.hpp>
#include <boost/hana/adapt_struct.hpp>
#include <boost/hana/core/to.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include <overlap/settings/resolved.hpp>
#include <overlap/settings/ub.hpp>
#include <overlap/settings/version.hpp>

// Declaration order, as in the structs (the printer and the writers keep it). `settings` is in
// reflect_settings.hpp: its 52 fields cost a printer that never reads them about a second.
BOOST_HANA_ADAPT_STRUCT(overlap::resolved_settings, tp_comm_overlap, sequence_parallel, overlap_p2p_comm,
                        batch_p2p_comm, overlap_grad_reduce, overlap_param_gather,
                        overlap_param_gather_with_optimizer_step, align_param_gather, bucket_size, num_buckets,
                        defer_embedding_wgrad_compute, wgrad_deferral_limit, overlap_moe_expert_parallel_comm,
                        delay_wgrad_compute, moe_shared_expert_overlap, tp_comm_overlap_cfg,
                        cuda_device_max_connections, nvte_fwd_layernorm_sm_margin, nvte_bwd_layernorm_sm_margin);

BOOST_HANA_ADAPT_STRUCT(overlap::ub::slot, method, num_sm, cga_size, num_splits, set_sm_margin, aggregate, fp8_buf,
                        atomic_gemm);

BOOST_HANA_ADAPT_STRUCT(overlap::version, major, minor, patch);

namespace overlap::reflect {

/// Calls `f(name, member)` for each field of `object` (a reflected struct), in declaration order;
/// `name` is a `std::string_view`, `member` a reference with the constness of `object`.
template <class T, class F>
constexpr void for_each_field(T& object, F&& f) {
  using plain = std::remove_const_t<T>;
  boost::hana::for_each(boost::hana::accessors<plain>(), [&](auto pair) {
    constexpr std::remove_cvref_t<decltype(boost::hana::first(pair))> key{};
    f(std::string_view{boost::hana::to<const char*>(key)}, boost::hana::second(pair)(object));
  });
}

/// Calls `f(name, a_member, b_member)` for each field of two values of one reflected struct.
template <class T, class F>
constexpr void for_each_field_pair(const T& a, const T& b, F&& f) {
  boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
    constexpr std::remove_cvref_t<decltype(boost::hana::first(pair))> key{};
    f(std::string_view{boost::hana::to<const char*>(key)}, boost::hana::second(pair)(a), boost::hana::second(pair)(b));
  });
}

/// The number of reflected fields of `T`.
template <class T>
inline constexpr std::size_t field_count = decltype(boost::hana::length(boost::hana::accessors<T>()))::value;

/// The first environment field of `resolved_settings`: it and every field after it are
/// environment variables, named like the field in upper case.
inline constexpr std::string_view first_environment_field = "cuda_device_max_connections";

}  // namespace overlap::reflect
