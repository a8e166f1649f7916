#pragma once
// The check/validate agreement sweep: configuration number I picks every option from a small
// list of alternatives (absent included) by hashing I. The same picks build the option types for
// check<...>() and, field by field, a run-time settings value for validate(); the two reports must
// agree. Values outside an option's domain are among the alternatives, so OPT-3 is swept too.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <overlap/overlap.hpp>

namespace sweep {
namespace ov = overlap;

constexpr std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
/// Which of `n` alternatives configuration `i` takes for option slot `field`; alternative 0 is
/// "absent" (or the default). Configuration i sets each slot with probability (i % 8) / 8, so the
/// sweep runs from sparse, mostly valid configurations to dense ones that break many rules.
constexpr std::size_t pick(std::size_t i, int field, std::size_t n) {
  const auto f = static_cast<std::uint64_t>(field);
  if (mix(i * 97 + f + 5000) % 8 >= i % 8) return 0;
  return static_cast<std::size_t>(1 + mix(i * 97 + f) % (n - 1));
}

struct absent {};

/// Alternative lists. Index 0 of an optional option means "absent" (0 / false in the value list).
inline constexpr int tp_v[] = {1, 2, 4};
inline constexpr int pp_v[] = {0, 2, 4, 1};
inline constexpr int vpp_v[] = {0, 0, 2, 3, 1};  // 1 is out of domain (OPT-3)
inline constexpr int cp_v[] = {0, 2};
inline constexpr int dp_v[] = {0, 2, 8, 4};
inline constexpr int ep_v[] = {0, 2, 4, 8};
inline constexpr int etp_v[] = {0, 0, 1};
inline constexpr int experts_v[] = {0, 64, 8, 6};
inline constexpr int shared_v[] = {0, 0, 1024};
inline constexpr int mtp_v[] = {0, 0, 1, 2};
inline constexpr int recompute_layers_v[] = {0, 0, 0, 1};
inline constexpr int buckets_v[] = {0, 0, 0, 4};
inline constexpr std::int64_t bucket_size_v[] = {0, 0, 0, 1'000'000};
inline constexpr int deferral_v[] = {0, 0, 2, -1};
inline constexpr int connections_v[] = {0, 0, 1, 8, 0, 40};  // 40 is out of domain
inline constexpr int margin_v[] = {0, 0, 20};
inline constexpr ov::dispatcher dispatcher_v[] = {ov::dispatcher::allgather, ov::dispatcher::alltoall,
                                                  ov::dispatcher::flex, ov::dispatcher::alltoall};
inline constexpr ov::flex_backend backend_v[] = {ov::flex_backend::deepep, ov::flex_backend::deepep,
                                                 ov::flex_backend::hybridep};
inline constexpr ov::dtype precision_v[] = {ov::dtype::fp32, ov::dtype::bf16, ov::dtype::bf16, ov::dtype::fp16};
inline constexpr ov::granularity granularity_v[] = {ov::granularity::full, ov::granularity::full, ov::granularity::full,
                                                    ov::granularity::selective};
inline constexpr ov::graph_impl graph_impl_v[] = {ov::graph_impl::none, ov::graph_impl::none,
                                                  ov::graph_impl::transformer_engine, ov::graph_impl::local};
inline constexpr ov::gpu_model gpu_v[] = {ov::gpu_model::h100, ov::gpu_model::h100, ov::gpu_model::b200,
                                          ov::gpu_model::gb200};
inline constexpr ov::version te_v[] = {{0, 0, 0}, {2, 6, 0}, {2, 9, 0}, {2, 12, 0}};

/// Option slots (field numbers for `pick`) and their alternative counts.
enum field : int {
  f_tp,
  f_pp,
  f_vpp,
  f_cp,
  f_dp,
  f_ep,
  f_etp,
  f_experts,
  f_shared,
  f_mtp,
  f_recompute_layers,
  f_buckets,
  f_bucket_size,
  f_deferral,
  f_connections,
  f_margin,
  f_dispatcher,
  f_backend,
  f_precision,
  f_granularity,
  f_recompute_method,
  f_recompute_modules,
  f_graph_impl,
  f_graph_modules,
  f_gpu,
  f_te,
  f_preset,
  // tri-state flags: absent, <true>, <false>
  f_sp,
  f_dist_opt,
  f_tp_overlap,
  f_p2p,
  f_batch,
  f_grad,
  f_param,
  f_param_step,
  f_align,
  f_defer,
  f_ep_overlap,
  f_delay,
  f_shared_overlap,
  f_early_release,
  f_dispatch_bwd,
  f_pad,
  f_fusion,
  f_bias,
  f_fp8,
  f_fp8_gather,
  f_dist_ckpt,
  f_warmup_flush
};

template <std::size_t I, int F, auto& Values>
inline constexpr auto value = Values[pick(I, F, std::size(Values))];
template <std::size_t I, int F, auto& Values>
inline constexpr bool present = pick(I, F, std::size(Values)) != 0;

template <bool Present, class Option>
using maybe = std::conditional_t<Present, Option, absent>;

template <std::size_t I, int F, template <bool> class Flag>
using tri = std::conditional_t<pick(I, F, 3) == 0, absent, Flag<pick(I, F, 3) == 1>>;

template <class... T>
struct list {};

/// `Kept` plus the types of `Rest` that are not `absent`.
template <class Kept, class... Rest>
struct drop_absent {
  using type = Kept;
};
template <class... Kept, class First, class... Rest>
struct drop_absent<list<Kept...>, First, Rest...>
    : drop_absent<std::conditional_t<std::is_same_v<First, absent>, list<Kept...>, list<Kept..., First>>, Rest...> {};

/// check<...>() on the options, and the settings value they reduce to (when the options are sound).
struct typed_result {
  ov::report report;
  std::optional<ov::settings> settings;
};

template <class... Options>
typed_result check_list(list<Options...>) {
  using pack = ov::detail::option_pack<Options...>;
  std::optional<ov::settings> s;
  if (pack::options_ok) s = pack::value;
  return {ov::check<Options...>(), s};
}

template <std::size_t I>
using options_of = typename drop_absent<
    list<>, ov::tp<value<I, f_tp, tp_v>>, maybe<present<I, f_pp, pp_v>, ov::pp<value<I, f_pp, pp_v>>>,
    maybe<present<I, f_vpp, vpp_v> && value<I, f_vpp, vpp_v> != 0, ov::vpp<value<I, f_vpp, vpp_v>>>,
    maybe<present<I, f_cp, cp_v>, ov::cp<value<I, f_cp, cp_v>>>,
    maybe<present<I, f_dp, dp_v>, ov::dp<value<I, f_dp, dp_v>>>,
    maybe<present<I, f_ep, ep_v>, ov::ep<value<I, f_ep, ep_v>>>,
    maybe<value<I, f_etp, etp_v> != 0, ov::etp<value<I, f_etp, etp_v>>>,
    maybe<present<I, f_experts, experts_v>, ov::num_moe_experts<value<I, f_experts, experts_v>>>,
    maybe<value<I, f_shared, shared_v> != 0, ov::moe_shared_expert_intermediate_size<value<I, f_shared, shared_v>>>,
    maybe<value<I, f_mtp, mtp_v> != 0, ov::mtp_num_layers<value<I, f_mtp, mtp_v>>>,
    maybe<value<I, f_recompute_layers, recompute_layers_v> != 0,
          ov::recompute_num_layers<value<I, f_recompute_layers, recompute_layers_v>>>,
    maybe<value<I, f_buckets, buckets_v> != 0, ov::num_buckets<value<I, f_buckets, buckets_v>>>,
    maybe<value<I, f_bucket_size, bucket_size_v> != 0, ov::bucket_size<value<I, f_bucket_size, bucket_size_v>>>,
    maybe<value<I, f_deferral, deferral_v> != 0, ov::wgrad_deferral_limit<value<I, f_deferral, deferral_v>>>,
    maybe<value<I, f_connections, connections_v> != 0,
          ov::cuda_device_max_connections<value<I, f_connections, connections_v>>>,
    maybe<value<I, f_margin, margin_v> != 0, ov::layernorm_sm_margin<value<I, f_margin, margin_v>>>,
    maybe<present<I, f_dispatcher, dispatcher_v>, ov::moe_token_dispatcher_type<value<I, f_dispatcher, dispatcher_v>>>,
    maybe<present<I, f_backend, backend_v>, ov::moe_flex_dispatcher_backend<value<I, f_backend, backend_v>>>,
    maybe<present<I, f_precision, precision_v>, ov::precision<value<I, f_precision, precision_v>>>,
    maybe<present<I, f_granularity, granularity_v>, ov::recompute_granularity<value<I, f_granularity, granularity_v>>>,
    maybe<pick(I, f_recompute_method, 4) == 1, ov::recompute_method<ov::recompute::block>>,
    std::conditional_t<
        pick(I, f_recompute_modules, 4) == 1, ov::recompute_modules<ov::module::moe>,
        std::conditional_t<pick(I, f_recompute_modules, 4) == 2,
                           ov::recompute_modules<ov::module::shared_experts, ov::module::core_attn>, absent>>,
    maybe<present<I, f_graph_impl, graph_impl_v>, ov::cuda_graph_impl<value<I, f_graph_impl, graph_impl_v>>>,
    std::conditional_t<
        pick(I, f_graph_modules, 4) == 1, ov::cuda_graph_modules<ov::graph_module::attn>,
        std::conditional_t<pick(I, f_graph_modules, 4) == 2,
                           ov::cuda_graph_modules<ov::graph_module::moe_router, ov::graph_module::moe>, absent>>,
    maybe<present<I, f_gpu, gpu_v>, ov::gpu<value<I, f_gpu, gpu_v>>>,
    maybe<present<I, f_te, te_v>,
          ov::te_version<value<I, f_te, te_v>.major, value<I, f_te, te_v>.minor, value<I, f_te, te_v>.patch>>,
    std::conditional_t<
        pick(I, f_preset, 4) == 1, ov::tp_comm_overlap_cfg<ov::ub::userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048>,
        std::conditional_t<pick(I, f_preset, 4) == 2,
                           ov::tp_comm_overlap_cfg<ov::ub::userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora>,
                           absent>>,
    tri<I, f_sp, ov::sequence_parallel>, tri<I, f_dist_opt, ov::distributed_optimizer>,
    tri<I, f_tp_overlap, ov::tp_comm_overlap>, tri<I, f_p2p, ov::overlap_p2p_comm>, tri<I, f_batch, ov::batch_p2p_comm>,
    tri<I, f_grad, ov::overlap_grad_reduce>, tri<I, f_param, ov::overlap_param_gather>,
    tri<I, f_param_step, ov::overlap_param_gather_with_optimizer_step>, tri<I, f_align, ov::align_param_gather>,
    tri<I, f_defer, ov::defer_embedding_wgrad_compute>, tri<I, f_ep_overlap, ov::overlap_moe_expert_parallel_comm>,
    tri<I, f_delay, ov::delay_wgrad_compute>, tri<I, f_shared_overlap, ov::moe_shared_expert_overlap>,
    tri<I, f_early_release, ov::ep_overlap_early_attn_memory_release>,
    tri<I, f_dispatch_bwd, ov::overlap_dispatch_backward_with_experts_wgrad>,
    tri<I, f_pad, ov::moe_pad_expert_input_to_capacity>, tri<I, f_fusion, ov::gradient_accumulation_fusion>,
    tri<I, f_bias, ov::add_bias_linear>, tri<I, f_fp8, ov::fp8>, tri<I, f_fp8_gather, ov::fp8_param_gather>,
    tri<I, f_dist_ckpt, ov::use_dist_ckpt>, tri<I, f_warmup_flush, ov::overlap_p2p_comm_warmup_flush>>::type;

/// check<...>() on configuration `I`'s option types.
template <std::size_t I>
typed_result checked() {
  return check_list(options_of<I>{});
}

/// The same picks written straight into a settings value, field by field.
ov::settings settings_of(std::size_t i);

}  // namespace sweep
