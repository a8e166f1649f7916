#pragma once
/// @file
/// The composed step: the programs of every rank of a layout (layout.hpp) with every enabled
/// family in one program. The pipeline order (pipeline_parallel.hpp) decides which micro-batch and
/// chunk runs when; each layer's attention and dense MLP are GEMM slots (tensor_parallel.hpp), a
/// MoE layer's MLP is routed experts (expert_parallel.hpp), with EP overlap pairing a forward with
/// the next backward layer by layer; the data-parallel buckets (data_parallel.hpp, buckets.hpp)
/// reduce gradients during the last micro-batch's backward and gather parameters ahead of the
/// first forward. The first stage embeds the tokens; the last runs the multi-token-prediction
/// layers (mtp_num_layers), normalizes, projects to the vocabulary and takes the loss, and does
/// the same for each MTP layer. Activation recompute adds the forward ops it repeats (keys with
/// `recompute`) right before the backward that needs them. With `fp8` or `fp4` the GEMMs of
/// Transformer Engine's modules (`runs_quantized`) take their operands in that format.
///
/// `step_schedule<Cfg>` fixes at compile time which families a config type composes and which
/// op types its programs contain; the single-family steps below are the same generator with the
/// other families left out, which is what the planner compares family by family.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/rules/validate.hpp>
#include <overlap/schedule/buckets.hpp>
#include <overlap/schedule/data_parallel.hpp>
#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/expert_parallel.hpp>
#include <overlap/schedule/layout.hpp>
#include <overlap/schedule/pipeline_parallel.hpp>
#include <overlap/schedule/pipeline_split.hpp>
#include <overlap/schedule/tensor_parallel.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

/// Which families a step composes; a family left out runs as if its size were 1.
struct family_set {
  bool tp = true, dp = true, pp = true, ep = true;
};

namespace detail {

inline int element_bytes(dtype d) { return d == dtype::fp32 ? 4 : 2; }

/// Which forwards the backward repeats (activation recompute, as the settings say).
struct recompute_policy {
  bool core_attention = false;  ///< selective: core attention
  bool mlp = false;             ///< selective: the dense MLP
  bool experts = false;         ///< selective: the routed experts ("moe")
  bool activation = false;      ///< selective: the routed experts' activation alone ("moe_act")
  bool norms = false;           ///< selective: the norms before attention and the MLP ("layernorm")
  bool shared_experts = false;  ///< selective: the shared experts
  bool mla_up_proj = false;     ///< selective: MLA's up projections ("mla_up_proj")
  int full_layers = 0;          ///< full: recompute_num_layers
  bool uniform = true;          ///< full: groups of full_layers (uniform) or the first ones (block)

  /// The chunk-local layers whose forward is repeated right before the backward of layer `j`
  /// (in forward order), for a chunk of `per_chunk` layers.
  std::vector<int> before_backward_of(int j, int per_chunk) const {
    if (full_layers <= 0) return {};
    if (!uniform) return j < full_layers ? std::vector<int>{j} : std::vector<int>{};
    const int first = j / full_layers * full_layers, last = std::min(first + full_layers, per_chunk) - 1;
    std::vector<int> group;
    if (j == last)
      for (int k = first; k <= last; ++k) group.push_back(k);
    return group;
  }
};

/// Everything compose_step derives from the settings, the workload and the families, checked.
struct step_shape {
  layout ranks{1, 1, 1, 1, 1};
  int chunks = 1, micro_batches = 1;
  /// The first transformer layer of each virtual stage (chunk c of stage p: c x pp + p), and the
  /// layer count as the last entry: virtual stage v holds layers first[v] .. first[v + 1] - 1.
  std::vector<int> first{0, 1};
  bool moe = false, combined = false, dp = true;
  int mtp = 0;  ///< multi-token-prediction layers, after the last virtual stage's layers
  moe_shape experts{};
  recompute_policy recompute{};
  int element_bytes = 2;
  std::int64_t activation_bytes = 0;  ///< one micro-batch's layer boundary on one tp rank
  std::int64_t layer_passes = 0;      ///< of the rank with the most layers: (layers + 2) x micro-batches x 2
};

/// The largest step compose_step generates, in layer passes (a layer's forward or backward for
/// one micro-batch) over the programs it generates (every rank's, or one per class of symmetric
/// ranks): each is 10 to 40 ops of ~180 bytes, so the limit is a few gigabytes of programs, what
/// a planning machine holds beside its simulation.
inline constexpr std::int64_t max_layer_passes = std::int64_t{1} << 24;

/// `a` x `b` for non-negative factors, or -1 when it does not fit in 64 bits (or a factor is -1).
constexpr std::int64_t checked_product(std::int64_t a, std::int64_t b) {
  if (a < 0 || b < 0) return -1;
  if (a != 0 && b > std::numeric_limits<std::int64_t>::max() / a) return -1;
  return a * b;
}
constexpr std::int64_t checked_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t v = 1;
  for (const std::int64_t f : factors) v = checked_product(v, f);
  return v;
}

/// Throws std::invalid_argument, before any op is generated, when `programs` programs of the step
/// `k` are more layer passes than `max_layer_passes`.
inline void check_generated(const step_shape& k, std::int64_t programs) {
  const std::int64_t passes = checked_product(programs, k.layer_passes);
  if (passes >= 0 && passes <= max_layer_passes) return;
  throw std::invalid_argument("compose_step: the step is too large to generate: " + std::to_string(programs) +
                              " programs x " + std::to_string(k.layer_passes) +
                              " layer passes ((layers per stage + 2) x micro-batches x 2) is over " +
                              std::to_string(max_layer_passes) +
                              " layer passes, several gigabytes of programs; plan a smaller model, fewer micro-batches "
                              "or fewer distinct ranks");
}
constexpr std::int64_t checked_sum(std::initializer_list<std::int64_t> terms) {
  std::int64_t v = 0;
  for (const std::int64_t t : terms) {
    if (t < 0 || v > std::numeric_limits<std::int64_t>::max() - t) return -1;
    v += t;
  }
  return v;
}

/// The qkv slot's parameters (workload::qkv_parameters), or -1 when they do not fit in 64 bits.
inline std::int64_t checked_qkv_parameters(const workload& w) {
  const std::int64_t hidden = w.hidden_size, heads = w.num_attention_heads;
  if (!w.multi_latent_attention) {
    const std::int64_t head = w.kv_channels > 0 ? w.kv_channels : hidden / heads;
    const std::int64_t groups = w.num_query_groups > 0 ? w.num_query_groups : heads;
    return checked_product(hidden, checked_sum({checked_product(heads, head), checked_product({2, groups, head})}));
  }
  const std::int64_t q_in = w.q_lora_rank > 0 ? w.q_lora_rank : hidden;
  return checked_sum({w.q_lora_rank > 0 ? checked_product(w.q_lora_rank, hidden + 1) : 0,
                      checked_product(std::int64_t{w.kv_lora_rank} + w.qk_pos_emb_head_dim, hidden), w.kv_lora_rank,
                      checked_product({q_in, heads, std::int64_t{w.qk_head_dim} + w.qk_pos_emb_head_dim}),
                      checked_product({w.kv_lora_rank, heads, std::int64_t{w.qk_head_dim} + w.v_head_dim})});
}

/// What of the workload's byte and parameter counts does not fit in 64 bits (whole tensors of
/// the whole model at 64 bytes each: Adam's 16 bytes of state per parameter, fp32 gradients, and
/// headroom for the generators' sums and multiples); empty when all do. Sizes must be positive.
inline std::string workload_overflow(const workload& w, int experts, int shared_ffn) {
  const std::int64_t hidden = w.hidden_size, tokens = checked_product(w.seq_length, w.micro_batch_size);
  // The widest head: GQA's, or MLA's query/key (with its rotary part) or value.
  const std::int64_t head = w.multi_latent_attention ? std::max(std::int64_t{w.qk_head_dim} + w.qk_pos_emb_head_dim,
                                                                std::int64_t{w.v_head_dim})
                            : w.kv_channels > 0      ? w.kv_channels
                                                     : hidden / w.num_attention_heads;
  const std::int64_t query = checked_product(w.num_attention_heads, head);
  const std::int64_t qkv = checked_qkv_parameters(w);
  const std::int64_t mlp =
      experts > 0 ? checked_sum({checked_product({experts, 3, hidden, w.moe_ffn_hidden_size}),
                                 checked_product({3, hidden, shared_ffn}), checked_product(hidden, experts)})
                  : checked_product({3, hidden, w.ffn_hidden_size});
  const std::int64_t layer = checked_sum({qkv, checked_product(query, hidden), mlp, checked_product(2, hidden)});
  const std::int64_t model =
      checked_sum({checked_product(w.num_layers, layer), checked_product({2, w.vocab_size, hidden}), hidden});
  const std::int64_t widest =
      std::max({hidden, query, std::int64_t{w.ffn_hidden_size}, std::int64_t{w.moe_ffn_hidden_size}});
  const std::int64_t routed = checked_product(std::max(1, w.moe_router_topk), widest);
  std::string text;
  const auto fits = [&](std::int64_t count, const char* what) {
    if (checked_product(count, 64) < 0) text += (text.empty() ? "" : ", ") + std::string(what);
  };
  fits(model, "the model's parameters");
  fits(checked_product(tokens, routed), "one micro-batch's activations (seq_length x micro_batch_size x width)");
  return text;
}

/// The sides of the step's matrix problems (GEMMs, grouped GEMMs, attention) beyond
/// `gemm_shape::most`, bounded before tensor parallelism divides them; empty when all are within.
inline std::string oversized_sides(const workload& w) {
  const std::int64_t tokens = checked_product(w.seq_length, w.micro_batch_size);
  std::string text;
  const auto side = [&](std::int64_t v, const char* what) {
    if (v < 0 || v > gemm_shape::most)
      text += (text.empty() ? "" : ", ") + std::string(what) + " = " +
              (v < 0 ? std::string("beyond 64 bits") : std::to_string(v));
  };
  side(tokens, "the tokens of a micro-batch (seq_length x micro_batch_size)");
  const std::int64_t qkv = checked_qkv_parameters(w);
  side(qkv < 0 ? -1 : (qkv + w.hidden_size - 1) / w.hidden_size, "the qkv projection's width");
  side(checked_product(2, std::max(w.ffn_hidden_size, w.moe_ffn_hidden_size)), "fc1's width (2 x ffn)");
  side(checked_product(w.num_attention_heads, w.micro_batch_size), "attention's heads x micro_batch_size");
  side(checked_product(tokens, std::max(1, w.moe_router_topk)), "the routed rows (tokens x moe_router_topk)");
  return text;
}

/// The problems compose_step finds, gathered so that one exception names them all.
struct shape_problems {
  std::vector<std::string> list;

  void need(bool ok, const std::string& what) {
    if (!ok) list.push_back(what);
  }
  [[noreturn]] void fail() const {
    std::string message =
        "compose_step: " + std::to_string(list.size()) + (list.size() == 1 ? " problem: " : " problems: ");
    for (std::size_t i = 0; i < list.size(); ++i) message += (i == 0 ? "" : "; ") + list[i];
    throw std::invalid_argument(message);
  }
};

/// The settings first: every rule of the table, as validate() reports them, but for those upstream
/// does not check and runs as written (validate_runnable); then the workload's sizes, positive and
/// within what a program may hold. False when the checks after these cannot run: they divide by
/// the sizes.
inline bool check_settings_and_sizes(const settings& s, const resolved_settings& r, const workload& w,
                                     shape_problems& problems) {
  const report checked = validate_runnable(s);
  // append, not "[" + string: g++ 12 -O3 reports a false -Wrestrict on that in some TUs (PR 105329).
  for (const diagnostic& v : checked)
    problems.list.push_back(std::string("[").append(v.id).append("] ").append(v.message));
  problems.need(
      !checked.resolved || *checked.resolved == r,
      "the resolved settings are not derive(settings) (pass Cfg::resolved with Cfg::settings, or derive(s) with s)");
  const bool positive = w.num_layers > 0 && w.micro_batches > 0 && w.seq_length > 0 && w.micro_batch_size > 0 &&
                        w.hidden_size > 0 && w.ffn_hidden_size > 0 && w.num_attention_heads > 0 && w.vocab_size > 0 &&
                        w.num_query_groups >= 0 && w.kv_channels >= 0 && w.moe_router_topk >= 0 &&
                        w.moe_ffn_hidden_size >= 0 &&
                        (!w.multi_latent_attention || (w.q_lora_rank >= 0 && w.kv_lora_rank > 0 && w.qk_head_dim > 0 &&
                                                       w.qk_pos_emb_head_dim >= 0 && w.v_head_dim > 0));
  if (positive)  // what a program may hold (gemm_shape::valid), far beyond any GEMM trained today
    for (const workload::named_extent& e : w.gemm_extents(s.mtp_num_layers.value_or(0) > 0))
      problems.need(e.extent <= static_cast<double>(gemm_shape::most),
                    "a GEMM size is beyond 2^31: " + std::string(e.what) + " = " +
                        std::to_string(std::llround(std::min(e.extent, 9e18))));
  problems.need(positive,
                "workload sizes must be positive (num_query_groups and kv_channels: 0 for the default; "
                "moe_router_topk and moe_ffn_hidden_size: 0 on a dense model; with multi_latent_attention "
                "q_lora_rank 0 for none and qk_pos_emb_head_dim 0 for no rotary part)");
  return checked.ok() && positive;
}

/// The sizes of the families a step composes; a family left out runs as if its size were 1.
struct family_sizes {
  int experts = 0;  ///< num_moe_experts (0: a dense model)
  int tp = 1, pp = 1, ep = 1;
  int chunks = 1;  ///< virtual pipeline stages per pipeline stage
  int data = 1;    ///< ranks along the data-parallel dimension: the dp group, or as many as the ep group needs
};

inline family_sizes family_sizes_of(const settings& s, family_set on) {
  family_sizes n;
  n.experts = s.num_moe_experts.value_or(0);
  n.tp = on.tp ? s.tensor_model_parallel_size : 1;
  n.pp = on.pp ? s.pipeline_model_parallel_size : 1;
  n.ep = on.ep && n.experts > 0 ? s.expert_model_parallel_size : 1;
  n.chunks = n.pp > 1 ? s.virtual_pipeline_model_parallel_size.value_or(1) : 1;
  n.data = on.dp ? s.data_parallel_size : (n.ep + n.tp - 1) / n.tp;
  return n;
}

/// The ranks of a step of these family sizes, in Megatron's order.
inline layout ranks_of(const family_sizes& n) { return layout(n.tp, 1, n.data, n.pp, n.ep); }

/// What the settings ask for that the step does not model.
inline void check_modelled(const settings& s, shape_problems& problems) {
  problems.need(!(s.fp8 && s.fp4), "fp8 and fp4 are both set: the step quantizes its GEMMs with one recipe; set one");
  problems.need(s.context_parallel_size == 1, "context parallelism (context_parallel_size " +
                                                  std::to_string(s.context_parallel_size) + ") is not modelled");
}

/// The layers of each virtual stage (chunk c of stage p at c x pp + p), and the most layers one
/// pipeline stage holds over its chunks.
struct pipeline_split {
  std::vector<int> layers;
  int most_per_stage = 0;
};

/// The pipeline's split of the layers (split_layers), and whether the interleaved schedule can run
/// the micro-batches.
inline pipeline_split split_pipeline(const settings& s, const workload& w, const family_sizes& n,
                                     shape_problems& problems) {
  pipeline_split out;
  const std::int64_t stages = std::int64_t{n.pp} * n.chunks;  // vpp is not bounded by the rules
  // One stage when the pipeline is left out: its layout fields then say nothing.
  out.layers = stages == 1 ? std::vector<int>{w.num_layers}
                           : split_layers(w, n.pp, n.chunks, s.mtp_num_layers.value_or(0), problems.list);
  for (int p = 0; p < n.pp && !out.layers.empty(); ++p) {
    int here = 0;
    for (int c = 0; c < n.chunks; ++c) here += out.layers[static_cast<std::size_t>(c * n.pp + p)];
    out.most_per_stage = std::max(out.most_per_stage, here);
  }
  problems.need(n.chunks == 1 || w.micro_batches % n.pp == 0,
                "the interleaved schedule needs micro_batches (" + std::to_string(w.micro_batches) +
                    ") to be a multiple of pp (" + std::to_string(n.pp) + ")");
  return out;
}

/// Whether tensor parallelism divides the attention heads, the query groups and the FFN.
inline void check_tensor_parallel_sizes(const workload& w, int tp, shape_problems& problems) {
  if (w.multi_latent_attention) {  // MLA's heads each have their own keys: no groups, no kv_channels
    problems.need(w.num_attention_heads % tp == 0,
                  "num_attention_heads must be a multiple of tp (" + std::to_string(tp) + ")");
  } else {
    problems.need(w.num_attention_heads % tp == 0 && w.query_groups() % tp == 0,
                  "num_attention_heads and num_query_groups must be multiples of tp (" + std::to_string(tp) + ")");
    problems.need(w.kv_channels > 0 || w.hidden_size % w.num_attention_heads == 0,
                  "hidden_size must be a multiple of num_attention_heads, or set kv_channels");
    problems.need(w.num_query_groups == 0 || w.num_attention_heads % w.num_query_groups == 0,
                  "num_attention_heads must be a multiple of num_query_groups");
  }
  problems.need(w.ffn_hidden_size % tp == 0, "ffn_hidden_size must be a multiple of tp");
}

/// The experts' sizes against the settings (none set without experts), and the expert-parallel
/// group against the ranks it is cut from.
inline void check_experts(const settings& s, const workload& w, const family_sizes& n, family_set on,
                          shape_problems& problems) {
  if (n.experts > 0) {
    problems.need(w.moe_router_topk > 0 && w.moe_router_topk <= n.experts,
                  "moe_router_topk (" + std::to_string(w.moe_router_topk) + ") must be in 1..num_moe_experts (" +
                      std::to_string(n.experts) + ")");
    problems.need(w.moe_ffn_hidden_size > 0, "moe_ffn_hidden_size must be positive with num_moe_experts set");
    problems.need(n.experts % n.ep == 0, "num_moe_experts (" + std::to_string(n.experts) +
                                             ") must be a multiple of ep (" + std::to_string(n.ep) + ")");
    if (!w.moe_layer_pattern.empty()) {
      problems.need(static_cast<std::int64_t>(w.moe_layer_pattern.size()) == w.num_layers,
                    "moe_layer_pattern has " + std::to_string(w.moe_layer_pattern.size()) + " entries, num_layers is " +
                        std::to_string(w.num_layers));
      problems.need(
          std::all_of(w.moe_layer_pattern.begin(), w.moe_layer_pattern.end(), [](int x) { return x == 0 || x == 1; }),
          "moe_layer_pattern holds 1 (MoE) or 0 (dense) for each layer");
    }
  } else {
    problems.need(w.moe_router_topk == 0 && w.moe_ffn_hidden_size == 0 && w.moe_layer_pattern.empty(),
                  "moe_router_topk / moe_ffn_hidden_size / moe_layer_pattern are set but num_moe_experts is not: "
                  "set num_moe_experts<N>");
  }
  problems.need((n.tp * n.data) % n.ep == 0,
                "ep (" + std::to_string(n.ep) + ") must divide tp x dp (" + std::to_string(n.tp * n.data) + ")");
  const int etp = on.tp ? s.expert_tensor_parallel_size.value_or(s.tensor_model_parallel_size) : 1;
  problems.need(n.ep == 1 || etp == 1, "expert tensor parallelism (etp " + std::to_string(etp) +
                                           ") is not modelled with ep > 1: set expert_tensor_parallel_size<1>");
}

/// The layer passes of the program of a rank of `most_per_stage` layers; -1 past 64 bits.
inline std::int64_t rank_layer_passes(const settings& s, const workload& w, int most_per_stage) {
  return checked_product({std::int64_t{most_per_stage} + 2 + s.mtp_num_layers.value_or(0), w.micro_batches, 2});
}

/// Whether the step's byte counts, matrix sides and size fit what generating it can hold.
inline void check_totals(const settings& s, const workload& w, const family_sizes& n, int most_per_stage,
                         shape_problems& problems) {
  const std::string overflow = workload_overflow(w, n.experts, s.moe_shared_expert_intermediate_size.value_or(0));
  problems.need(overflow.empty(), "byte counts do not fit in 64 bits: " + overflow + "; use smaller sizes");
  const std::string sides = oversized_sides(w);
  problems.need(sides.empty(),
                "matrix problems beyond 2^31 a side (gemm_shape::most): " + sides + "; use smaller sizes");
  // The world fits (L-5); one rank's program must too (check_generated: the programs made).
  const std::int64_t passes = rank_layer_passes(s, w, most_per_stage);
  problems.need(passes >= 0 && passes <= max_layer_passes,
                "the step is too large to generate: (layers per stage + 2) x micro_batches x 2 of one rank is over " +
                    std::to_string(max_layer_passes) + " layer passes; plan a smaller model or fewer micro-batches");
}

/// The forwards the backward repeats, as the recompute settings say.
inline recompute_policy recompute_of(const settings& s, const workload& w, shape_problems& problems) {
  recompute_policy out;
  if (s.recompute_granularity == granularity::selective) {
    const bool defaults = s.recompute_modules.empty();
    out.core_attention = defaults || s.recompute_modules.contains(module::core_attn);
    out.mlp = s.recompute_modules.contains(module::mlp);
    out.experts = s.recompute_modules.contains(module::moe);
    out.activation = s.recompute_modules.contains(module::moe_act);
    out.norms = s.recompute_modules.contains(module::layernorm);
    out.shared_experts = s.recompute_modules.contains(module::shared_experts);
    out.mla_up_proj = s.recompute_modules.contains(module::mla_up_proj);
    problems.need(!out.mla_up_proj || w.multi_latent_attention,
                  "recompute_modules: mla_up_proj recomputes multi-latent attention's up projections; the workload "
                  "has no multi_latent_attention");
  }
  if (s.recompute_granularity == granularity::full) {
    out.full_layers = s.recompute_num_layers.value_or(1);
    out.uniform = s.recompute_method.value_or(recompute::uniform) == recompute::uniform;
    problems.need(out.full_layers > 0, "recompute_num_layers must be positive");
  }
  return out;
}

/// The shape of a step that passed every check.
inline step_shape assemble_shape(const settings& s, const resolved_settings& r, const workload& w, family_set on,
                                 const family_sizes& n, const std::vector<int>& split,
                                 const recompute_policy& recompute) {
  step_shape k;
  k.moe = n.experts > 0;
  k.chunks = n.chunks;
  k.recompute = recompute;
  k.ranks = ranks_of(n);
  k.first.assign(1, 0);
  for (const int layers : split) k.first.push_back(k.first.back() + layers);
  k.micro_batches = w.micro_batches;
  k.mtp = s.mtp_num_layers.value_or(0);
  k.combined = n.ep > 1 && r.overlap_moe_expert_parallel_comm;
  k.dp = on.dp;
  k.experts = {.experts = n.experts,
               .shared_ffn = s.moe_shared_expert_intermediate_size.value_or(0),
               .delay_wgrad = r.delay_wgrad_compute,
               .early_attn_release = s.ep_overlap_early_attn_memory_release,
               .recompute_experts = recompute.experts,
               .recompute_activation = recompute.activation,
               .recompute_shared = recompute.shared_experts,
               .recompute_norm = recompute.norms,
               .host_token_counts = s.moe_token_dispatcher_type == dispatcher::alltoall};
  k.element_bytes = element_bytes(s.precision);
  k.activation_bytes = w.tokens() * w.hidden_size * k.element_bytes / n.tp;  // sequence parallel
  return k;
}

/// Everything compose_step derives, checked: each check adds what it finds, and compose_step
/// throws once, naming every problem. The settings and sizes come first, since the checks after
/// them divide by the sizes.
inline step_shape shape_of(const settings& s, const resolved_settings& r, const workload& w, family_set on) {
  shape_problems problems;
  if (!check_settings_and_sizes(s, r, w, problems)) problems.fail();
  const family_sizes n = family_sizes_of(s, on);
  check_modelled(s, problems);
  const pipeline_split split = split_pipeline(s, w, n, problems);
  check_tensor_parallel_sizes(w, n.tp, problems);
  check_experts(s, w, n, on, problems);
  check_totals(s, w, n, split.most_per_stage, problems);
  const recompute_policy recompute = recompute_of(s, w, problems);
  if (!problems.list.empty()) problems.fail();
  step_shape k = assemble_shape(s, r, w, on, n, split.layers, recompute);
  k.layer_passes = rank_layer_passes(s, w, split.most_per_stage);
  return k;
}

/// The program of one rank; `like`, where given, the program of another rank of the step, whose
/// size (an eighth more) it reserves room for.
class rank_builder {
 public:
  rank_builder(const step_shape& k, const settings& s, const resolved_settings& r, const workload& w, int rank,
               const program* like = nullptr)
      : k_(k), s_(s), r_(r), w_(w), at_(k.ranks.at(rank)), e_(p_) {
    if (like) e_.reserve(like->ops.size() + like->ops.size() / 8, like->buffers.size() + like->buffers.size() / 8);
    p_.rank = rank;
    p_.cuda_device_max_connections = r.cuda_device_max_connections.value_or(0);
    e_.quantize(s.fp4 ? gemm_format::fp4 : s.fp8 ? gemm_format::fp8 : gemm_format::native);
  }
  rank_builder(const rank_builder&) = delete;  // the emitter and its hooks point into this object
  rank_builder& operator=(const rank_builder&) = delete;

  program build() && {
    const layout& L = k_.ranks;
    const int stage = at_.stage, pp = L.pp();
    compute_ = e_.add_stream(stream_role::compute, 0);
    tp_.emplace(e_, compute_, L.tensor_parallel(at_), at_.tp, w_, k_.element_bytes, r_.tp_comm_overlap_cfg,
                selective_recompute{k_.recompute.core_attention, k_.recompute.mlp, k_.recompute.norms,
                                    k_.recompute.mla_up_proj});
    if (k_.moe) moe_.emplace(e_, compute_, L.expert_parallel(at_), w_, L.tp(), k_.element_bytes, k_.experts);
    dp_.emplace(e_, compute_, dp_plan_of(), s_, r_, k_.micro_batches, k_.element_bytes);
    // Parameters are waited for right before the op that first reads them, and a bucket reduces
    // once the ops completing its gradients have run: per tensor, not per layer.
    e_.set_hooks({.before =
                      [this](const op_key& k) {
                        if (!k.recompute) dp_->before_forward(chunk_of(k), holder_of(k), k.type);
                      },
                  .after =
                      [this](const op_key& k) {
                        if (const op_type t = gradients_of(k.type); t != op_type::none)
                          dp_->after_backward(chunk_of(k), holder_of(k), t, k.at.micro_batch);
                      }});
    std::optional<pp_stage> pipe;
    const int extra = k_.combined ? 1 : 0;
    if (pp > 1)
      pipe.emplace(e_, compute_, stage, L.pipeline(at_), k_.chunks, k_.first, k_.micro_batches, extra,
                   k_.activation_bytes, r_.overlap_p2p_comm);
    const std::vector<pp_action> order = pipe ? pipe->order() : pipeline_order(0, 1, 1, k_.micro_batches, extra);
    const int warmup = pipeline_warmup(stage, pp, k_.chunks, k_.micro_batches, extra);

    dp_->prologue();
    int forwards = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const bool paired = k_.combined && steady_pair(i, warmup, order.size());
      const pp_action* fwd = order[i].forward ? &order[i] : nullptr;
      const pp_action* bwd = paired ? &order[i + 1] : order[i].forward ? nullptr : &order[i];
      if (fwd) dp_->before_pipeline_forward(forwards++);
      if (pipe) pipe->before(i);
      if (pipe && paired) pipe->before(i + 1);
      run(fwd, bwd);
      if (pipe) pipe->after(i);
      if (pipe && paired) pipe->after(i + 1);
      if (paired) ++i;
    }
    if (moe_) moe_->finish();
    if (pipe) pipe->finish();
    dp_->epilogue();
    size_layer_boundaries();
    return std::move(p_);
  }

 private:
  bool embeds(int chunk) const { return at_.stage == 0 && chunk == 0; }
  bool heads(int chunk) const { return at_.stage + 1 == k_.ranks.pp() && chunk + 1 == k_.chunks; }
  /// This stage's virtual stage of `chunk`, its layer count and its global layer j.
  std::size_t virtual_stage(int chunk) const { return static_cast<std::size_t>(chunk * k_.ranks.pp() + at_.stage); }
  int layers(int chunk) const { return k_.first[virtual_stage(chunk) + 1] - k_.first[virtual_stage(chunk)]; }
  int global(int chunk, int j) const { return k_.first[virtual_stage(chunk)] + j; }
  /// Chunk-local index of what computes with parameters: embedding, layers, MTP layers, output
  /// layer (Megatron-Core's order of registration).
  int holder(int chunk, int j) const { return (embeds(chunk) ? 1 : 0) + j; }
  int mtp_here(int chunk) const { return heads(chunk) ? k_.mtp : 0; }
  int head_holder(int chunk) const { return holder(chunk, layers(chunk) + mtp_here(chunk)); }
  /// Multi-token-prediction layer i is the transformer layer `mtp_layer(i)` after the model's:
  /// its projection writes that layer's input from the hidden state `mtp_layer(i) - 1` (the
  /// model's output, or MTP layer i - 1's), and its own final norm and output layer read its
  /// output `mtp_layer(i) + 1`.
  int mtp_layer(int i) const { return w_.num_layers + 2 * i + 1; }
  /// Whether layer `l` runs routed experts: an MoE model's layers but those moe_layer_pattern
  /// makes dense.
  bool moe_at(int l) const { return k_.moe && w_.moe_layer(l); }
  /// The chunk and chunk-local holder of a compute op's parameters.
  int chunk_of(const op_key& k) const {
    if (k.at.layer >= w_.num_layers) return k_.chunks - 1;  // an MTP layer's
    if (k.at.layer >= 0) {
      const auto v = std::upper_bound(k_.first.begin(), k_.first.end(), k.at.layer) - k_.first.begin() - 1;
      return static_cast<int>(v) / k_.ranks.pp();
    }
    return k.type == op_type::embedding_fprop || k.type == op_type::embedding_bprop ? 0 : k_.chunks - 1;
  }
  int holder_of(const op_key& k) const {
    const int last = k_.chunks - 1;
    if (k.at.layer >= w_.num_layers) return holder(last, layers(last) + (k.at.layer - w_.num_layers - 1) / 2);
    if (k.at.layer >= 0) return holder(chunk_of(k), k.at.layer - global(chunk_of(k), 0));
    const bool embedding = k.type == op_type::embedding_fprop || k.type == op_type::embedding_bprop;
    return embedding ? 0 : head_holder(k_.chunks - 1);
  }
  bool share_embedding() const { return w_.share_embeddings_and_output_weights; }
  /// The parameters the output layer computes with: its own, or the shared embedding's.
  op_type head_weights() const {
    return share_embedding() && k_.ranks.pp() == 1 ? op_type::embedding_fprop : op_type::lm_head_fprop;
  }

  /// The tensors of transformer layer `l` (of holder `h`), in model order.
  void layer_tensors(std::vector<parameter_tensor>& t, int h, int l) const {
    const int tp = k_.ranks.tp(), ep = k_.ranks.ep();
    // A norm is fused into the GEMM after it (TE's LayerNormLinear): that GEMM reads it first.
    const auto add = [&](op_type of, std::int64_t n, op_type used_by, bool expert = false) {
      if (n > 0) t.push_back({of, h, l, n, expert, used_by});
    };
    const bool moe = moe_at(l);
    const op_type mlp_in = moe ? op_type::router_fprop : op_type::fc1_fprop;
    add(op_type::layernorm_fprop, w_.norm_parameters(), op_type::qkv_fprop);
    add(op_type::qkv_fprop, w_.qkv_local_parameters(tp), op_type::qkv_fprop);
    add(op_type::proj_fprop, w_.proj_parameters() / tp, op_type::proj_fprop);
    add(op_type::layernorm_fprop, w_.norm_parameters(), mlp_in);
    if (moe) {
      add(op_type::router_fprop, w_.router_parameters(k_.experts.experts), op_type::router_fprop);
      add(op_type::shared_experts_fprop, w_.expert_parameters(k_.experts.shared_ffn) / tp,
          op_type::shared_experts_fprop);
      add(op_type::experts_fprop, moe_builder::expert_parameters(w_, k_.experts, ep, tp), op_type::experts_fprop,
          ep > 1);
    } else {
      add(op_type::fc1_fprop, w_.fc1_parameters() / tp, op_type::fc1_fprop);
      add(op_type::fc2_fprop, w_.fc2_parameters() / tp, op_type::fc2_fprop);
    }
  }

  dp_plan dp_plan_of() const {
    const layout& L = k_.ranks;
    const int tp = L.tp(), ep = L.ep();
    // Without the DP family every parameter is replicated: the optimizer updates them all here.
    dp_plan plan{
        {}, k_.dp ? L.data_parallel(at_) : group{}, k_.dp && k_.moe && ep > 1 ? L.expert_data_parallel(at_) : group{}};
    for (int c = 0; c < k_.chunks; ++c) {
      auto& t = plan.chunks.emplace_back();
      if (embeds(c))
        t.push_back({op_type::embedding_fprop, 0, -1, w_.embedding_parameters() / tp, false, op_type::embedding_fprop});
      for (int j = 0; j < layers(c); ++j) layer_tensors(t, holder(c, j), global(c, j));
      for (int i = 0; i < mtp_here(c); ++i) {
        const int h = holder(c, layers(c) + i), l = mtp_layer(i);
        t.push_back({op_type::mtp_proj_fprop, h, l, w_.mtp_projection_parameters() / tp + w_.mtp_norm_parameters(),
                     false, op_type::mtp_proj_fprop});
        layer_tensors(t, h, l);
        t.push_back({op_type::layernorm_fprop, h, l, w_.norm_parameters(), false, op_type::layernorm_fprop});
      }
      if (heads(c)) {
        t.push_back(
            {op_type::layernorm_fprop, head_holder(c), -1, w_.norm_parameters(), false, op_type::layernorm_fprop});
        if (head_weights() == op_type::lm_head_fprop)
          t.push_back({op_type::lm_head_fprop, head_holder(c), -1, w_.embedding_parameters() / tp, false,
                       op_type::lm_head_fprop});
      }
    }
    plan.reduce_after_pipeline = L.pp() > 1 && at_.stage != 0 && k_.chunks == 1;
    plan.pp = L.pp();
    plan.stage = at_.stage;
    plan.state_bytes = adam_state_bytes(w_.optimizer, s_.precision, s_.te_version);
    plan.params = parameter_storage(s_, w_.fp8_recipe_mxfp8, k_.element_bytes);
    if (k_.dp && share_embedding() && L.pp() > 1 && (embeds(0) || heads(k_.chunks - 1))) {
      plan.embedding = L.embedding(at_);
      plan.embedding_parameters = w_.embedding_parameters() / tp;
      plan.embedding_of = embeds(0) ? op_type::embedding_fprop : op_type::lm_head_fprop;
    }
    return plan;
  }

  /// One pipeline action (or a forward and backward pair): the forward of chunk `f->chunk` for
  /// micro-batch `f->micro_batch` and/or the backward of `b`'s.
  void run(const pp_action* f, const pp_action* b) {
    if (moe_) moe_->reset_chains();
    if (f && embeds(f->chunk)) embedding_forward(f->micro_batch);
    if (b && heads(b->chunk)) head_backward(b->micro_batch);
    // A paired forward and backward may be of chunks of different lengths (an uneven pipeline):
    // layer by layer while both have one, then the longer one alone.
    const int fn = f ? layers(f->chunk) : 0, bn = b ? layers(b->chunk) : 0;
    for (int j = 0; j < std::max(fn, bn); ++j) {
      const int fj = j, bj = bn - 1 - j;
      if (b && bj >= 0) recompute_before(b->chunk, bj, b->micro_batch);
      const int fl = f && fj < fn ? global(f->chunk, fj) : -1, bl = b && bj >= 0 ? global(b->chunk, bj) : -1;
      if (moe_ && k_.combined) {
        // A dense layer of the pair runs on its own (upstream's schedule plan has no dispatch or
        // combine for it), after what the MoE layer before it owes; the MoE one is paired alone.
        const bool dense_f = fl >= 0 && !moe_at(fl), dense_b = bl >= 0 && !moe_at(bl);
        if (dense_f || dense_b) moe_->flush();
        if (dense_f) forward(fl, f->micro_batch);
        if (dense_b) backward(bl, b->micro_batch);
        const int mf = dense_f ? -1 : fl, mb = dense_b ? -1 : bl;
        if (mf >= 0 || mb >= 0) moe_->layer(*tp_, mf, mf >= 0 ? f->micro_batch : -1, mb, mb >= 0 ? b->micro_batch : -1);
      } else {
        if (fl >= 0) forward(fl, f->micro_batch);
        if (bl >= 0) backward(bl, b->micro_batch);
      }
    }
    if (moe_) moe_->flush();
    if (f && heads(f->chunk)) head_forward(f->micro_batch);
    if (b && embeds(b->chunk)) embedding_backward(b->micro_batch);
  }

  void forward(int l, int mb, bool recompute = false) {
    if (moe_at(l)) {
      moe_->layer(*tp_, l, mb, -1, -1, recompute);
      return;
    }
    if (moe_) moe_->flush();  // the MoE layer before owes its output
    const int attention = tp_->attention_forward(l, mb, e_.buffer(activation(l, mb)), recompute);
    tp_->mlp_forward(l, mb, attention, e_.buffer(activation(l + 1, mb)), recompute);
  }
  void backward(int l, int mb) {
    if (moe_at(l)) {
      moe_->layer(*tp_, -1, -1, l, mb);
      return;
    }
    const int grad = tp_->mlp_backward(l, mb, e_.buffer(activation_grad(l + 1, mb)), tp_->attention_output(l, mb));
    tp_->attention_backward(l, mb, grad, e_.buffer(activation(l, mb)), e_.buffer(activation_grad(l, mb)));
  }
  /// Full recompute: the forwards the backward of chunk-local layer `j` needs repeated.
  void recompute_before(int chunk, int j, int mb) {
    for (const int k : k_.recompute.before_backward_of(j, layers(chunk))) forward(global(chunk, k), mb, true);
    if (moe_) moe_->flush();
  }

  /// The hidden states between layers and their gradients (whoever wrote them: a layer, the
  /// embedding, a pipeline receive) are this rank's tokens of the hidden state.
  void size_layer_boundaries() {
    p_.buffer_bytes.resize(p_.buffers.size(), 0);
    for (std::size_t i = 0; i < p_.buffers.size(); ++i)
      if (p_.buffers[i].kind == buffer_kind::activation || p_.buffers[i].kind == buffer_kind::activation_grad)
        p_.buffer_bytes[i] = hidden_bytes();
  }
  int params(op_type of) { return e_.buffer(parameters(of, -1)); }
  int grads(op_type of) { return e_.buffer(gradients(of, -1)); }
  /// The final norm's output (this rank's tokens), which the output layer keeps for its weight
  /// gradient, and the gradient that comes back through it.
  int head_workspace(op_type of, location at) {
    return e_.buffer({.kind = buffer_kind::workspace, .of = of, .at = at}, hidden_bytes());
  }
  /// The loss's state a micro-batch keeps from forward to backward: the softmax over this rank's
  /// part of the vocabulary, in fp32 (Megatron's vocabulary-parallel cross entropy computes it
  /// in fp32 from the logits and keeps it for the gradient).
  int loss(location at) {
    return e_.buffer({.kind = buffer_kind::loss, .at = at}, w_.tokens() * (w_.vocab_size / k_.ranks.tp()) * 4);
  }
  double tokens() const { return static_cast<double>(w_.tokens()); }
  /// Bytes of one micro-batch's hidden states on this rank (a sequence-parallel shard).
  std::int64_t hidden_bytes() const { return k_.activation_bytes; }

  void embedding_forward(int mb) {
    e_.compute(compute_, {.type = op_type::embedding_fprop, .at = {.micro_batch = mb}}, 0,
               {params(op_type::embedding_fprop)}, {e_.buffer(activation(0, mb))}, 2 * hidden_bytes());
  }
  void embedding_backward(int mb) {
    e_.compute(compute_, {.type = op_type::embedding_bprop, .at = {.micro_batch = mb}}, 0,
               {e_.buffer(activation_grad(0, mb)), grads(op_type::embedding_fprop)}, {grads(op_type::embedding_fprop)},
               3 * hidden_bytes());
  }
  /// The multi-token-prediction layers, then the final norm, output layer and loss of
  /// micro-batch `mb`, then each MTP layer's (vocabulary-parallel over tp, sharing the output
  /// layer's weights).
  void head_forward(int mb) {
    for (int i = 0; i < k_.mtp; ++i) {
      const int l = mtp_layer(i);
      tp_->mtp_projection_forward({.layer = l, .micro_batch = mb}, e_.buffer(activation(l - 1, mb)),
                                  e_.buffer(activation(l, mb)));
      forward(l, mb);
      if (moe_) moe_->flush();
    }
    output_forward(w_.num_layers, {.micro_batch = mb});
    for (int i = 0; i < k_.mtp; ++i) output_forward(mtp_layer(i) + 1, {.layer = mtp_layer(i), .micro_batch = mb});
  }
  /// Backward of `head_forward`, the MTP layers from the last: each MTP layer's gradient reaches
  /// the hidden state before it, which the output layer's gradient there adds to.
  void head_backward(int mb) {
    for (int i = k_.mtp; i-- > 0;) {
      const int l = mtp_layer(i);
      output_backward(l + 1, {.layer = l, .micro_batch = mb}, i + 1 < k_.mtp);
      backward(l, mb);
      if (moe_) moe_->flush();
      tp_->mtp_projection_backward({.layer = l, .micro_batch = mb}, e_.buffer(activation_grad(l, mb)),
                                   e_.buffer(activation(l - 1, mb)), e_.buffer(activation_grad(l - 1, mb)));
    }
    output_backward(w_.num_layers, {.micro_batch = mb}, k_.mtp > 0);
  }
  /// A final norm (the model's, or at an MTP layer's location its own) over the hidden state
  /// `hidden`, the output layer and the loss (fused). Vocabulary-parallel over tp: tokens x
  /// hidden times hidden x vocab / tp.
  void output_forward(int hidden, location at) {
    const int normed = head_workspace(op_type::layernorm_fprop, at);
    e_.compute(
        compute_, {.type = op_type::layernorm_fprop, .at = at}, 0,
        {e_.buffer(activation(hidden, at.micro_batch)), e_.buffer(parameters(op_type::layernorm_fprop, at.layer))},
        {normed}, 2 * hidden_bytes());
    e_.gemm(compute_, {.type = op_type::lm_head_fprop, .at = at},
            {w_.tokens(), w_.vocab_size / k_.ranks.tp(), w_.hidden_size}, {normed, params(head_weights())}, {loss(at)});
  }
  /// Its backward; `adds` when the gradient of `hidden` holds another's already (an MTP layer's).
  void output_backward(int hidden, location at, bool adds) {
    const int mb = at.micro_batch;
    const double flops = 2 * w_.gemm_flops(w_.embedding_parameters()) / k_.ranks.tp();
    const int normed_grad = head_workspace(op_type::lm_head_bprop, at);
    e_.compute(compute_, {.type = op_type::lm_head_bprop, .at = at}, flops,
               {loss(at), head_workspace(op_type::layernorm_fprop, at), params(head_weights()), grads(head_weights())},
               {normed_grad, grads(head_weights())});
    const int norm_grads = e_.buffer(gradients(op_type::layernorm_fprop, at.layer)),
              out = e_.buffer(activation_grad(hidden, mb));
    buffer_list reads{normed_grad, e_.buffer(activation(hidden, mb)), norm_grads};
    if (adds) reads.push_back(out);
    e_.compute(compute_, {.type = op_type::layernorm_bprop, .at = at}, 0, std::move(reads), {out, norm_grads},
               (adds ? 4 : 3) * hidden_bytes());
  }

  const step_shape& k_;
  const settings& s_;
  const resolved_settings& r_;
  const workload& w_;
  place at_;
  program p_;
  emitter e_;
  int compute_ = 0;
  std::optional<tp_builder> tp_;
  std::optional<moe_builder> moe_;
  std::optional<dp_buckets> dp_;
};

}  // namespace detail

/// The ranks of the run the settings describe (the families of `on`), in Megatron's order: what
/// compose_step lays its programs out on.
inline layout layout_of(const settings& s, family_set on = {}) {
  return detail::ranks_of(detail::family_sizes_of(s, on));
}

/// The programs of every rank of the layout `s` gives (valid settings: see `validate`), with the
/// families in `on`. Throws std::invalid_argument naming every problem of the workload against
/// the settings (sizes the schedule cannot split, MoE sizes without experts, what is not
/// modelled).
inline std::vector<program> compose_step(const settings& s, const resolved_settings& r, const workload& w,
                                         family_set on = {}) {
  const detail::step_shape k = detail::shape_of(s, r, w, on);
  detail::check_generated(k, k.ranks.world());
  std::vector<program> step;
  step.reserve(static_cast<std::size_t>(k.ranks.world()));
  for (int rank = 0; rank < k.ranks.world(); ++rank)
    step.push_back(detail::rank_builder(k, s, r, w, rank, step.empty() ? nullptr : &step.back()).build());
  return step;
}

/// One step of the TP family alone: a tp group.
inline std::vector<program> tensor_parallel_step(const settings& s, const resolved_settings& r, const workload& w) {
  return compose_step(s, r, w, {.tp = true, .dp = false, .pp = false, .ep = false});
}
/// One step of the DP family alone: a data-parallel group and its optimizer.
inline std::vector<program> data_parallel_step(const settings& s, const resolved_settings& r, const workload& w) {
  return compose_step(s, r, w, {.tp = false, .dp = true, .pp = false, .ep = false});
}
/// One step of the PP family alone: a pipeline.
inline std::vector<program> pipeline_parallel_step(const settings& s, const resolved_settings& r, const workload& w) {
  return compose_step(s, r, w, {.tp = false, .dp = false, .pp = true, .ep = false});
}
/// One step of the EP family alone: an ep group of MoE layers.
inline std::vector<program> expert_parallel_step(const settings& s, const resolved_settings& r, const workload& w) {
  return compose_step(s, r, w, {.tp = false, .dp = false, .pp = false, .ep = true});
}

/// The op types the programs of a configuration can contain (whatever the workload, except that
/// MoE types need experts in the settings, and MTP's projection mtp_num_layers). Multi-latent
/// attention, a workload size, runs as the same types.
constexpr op_type_set used_op_types(const settings& s, const resolved_settings& r) {
  op_type_set t;
  for (const op_type c :
       {op_type::embedding_fprop, op_type::embedding_bprop, op_type::layernorm_fprop, op_type::layernorm_bprop,
        op_type::qkv_fprop, op_type::qkv_dgrad, op_type::qkv_wgrad, op_type::attn_core_fprop, op_type::attn_core_bprop,
        op_type::proj_fprop, op_type::proj_dgrad, op_type::proj_wgrad, op_type::lm_head_fprop, op_type::lm_head_bprop,
        op_type::optimizer_step, op_type::event_record, op_type::event_wait})
    t.add(c);
  const bool moe = s.num_moe_experts.value_or(0) > 0;
  if (s.mtp_num_layers.value_or(0) > 0)
    t.add(op_type::mtp_proj_fprop).add(op_type::mtp_proj_dgrad).add(op_type::mtp_proj_wgrad);
  if (!moe)
    for (const op_type c : {op_type::fc1_fprop, op_type::fc1_dgrad, op_type::fc1_wgrad, op_type::fc2_fprop,
                            op_type::fc2_dgrad, op_type::fc2_wgrad})
      t.add(c);
  if (moe) {
    for (const op_type c : {op_type::router_fprop, op_type::router_bprop, op_type::permute_fprop,
                            op_type::permute_bprop, op_type::unpermute_fprop, op_type::unpermute_bprop,
                            op_type::experts_fprop, op_type::experts_dgrad, op_type::experts_wgrad})
      t.add(c);
    if (s.moe_shared_expert_intermediate_size.value_or(0) > 0)
      for (const op_type c :
           {op_type::shared_experts_fprop, op_type::shared_experts_dgrad, op_type::shared_experts_wgrad})
        t.add(c);
    if (s.expert_model_parallel_size > 1)
      for (const op_type c :
           {op_type::ep_dispatch, op_type::ep_combine, op_type::ep_dispatch_bprop, op_type::ep_combine_bprop})
        t.add(c);
    if (s.expert_model_parallel_size > 1 && s.moe_token_dispatcher_type == dispatcher::alltoall)
      t.add(op_type::moe_token_count_sync);
  }
  if (s.tensor_model_parallel_size > 1) {
    t.add(op_type::tp_all_gather).add(op_type::tp_reduce_scatter);
    const auto& c = r.tp_comm_overlap_cfg;
    for (const ub::slot* slot : {&c.qkv_dgrad, &c.qkv_wgrad, &c.fc1_dgrad, &c.fc1_wgrad, &c.qkv_fprop, &c.proj_dgrad,
                                 &c.fc1_fprop, &c.fc2_dgrad, &c.proj_fprop, &c.fc2_fprop})
      if (slot->method == ub::method::ring_exchange)
        t.add(op_type::tp_ring_send).add(op_type::tp_ring_recv).add(op_type::tp_ring_reduce);
  }
  if (s.data_parallel_size > 1 || (moe && s.expert_model_parallel_size > 1)) {
    t.add(op_type::dp_grad_reduce);
    if (s.distributed_optimizer) t.add(op_type::dp_param_gather);
  }
  if (s.pipeline_model_parallel_size > 1) {
    t.add(op_type::pp_send_forward)
        .add(op_type::pp_recv_forward)
        .add(op_type::pp_send_backward)
        .add(op_type::pp_recv_backward);
    t.add(op_type::embedding_grad_all_reduce);
  }
  return t;
}

/// A family's part of a config type's schedule, and whether its overlap is on.
template <family F, bool Overlapped>
struct component {
  static constexpr schedule::family family = F;
  static constexpr bool overlapped = Overlapped;
};

/// The schedule of config type `Cfg` (`Cfg::schedule`): `components` is a std::tuple with one
/// `component` per family the layout enables (tp, dp, pp, ep with sizes > 1), fixed at compile
/// time; `op_types` the op types its programs can contain (what a trainer must bind).
template <class Cfg>
struct step_schedule {
 private:
  static constexpr settings s = Cfg::settings;
  static constexpr resolved_settings r = Cfg::resolved;
  template <bool On, family F, bool Overlapped>
  using part = std::conditional_t<On, std::tuple<component<F, Overlapped>>, std::tuple<>>;

 public:
  using components = decltype(std::tuple_cat(
      part<(s.tensor_model_parallel_size > 1), family::tp, r.tp_comm_overlap>{},
      part<(s.data_parallel_size > 1), family::dp, r.overlap_grad_reduce || r.overlap_param_gather>{},
      part<(s.pipeline_model_parallel_size > 1), family::pp, r.overlap_p2p_comm>{},
      part<(s.expert_model_parallel_size > 1), family::ep, r.overlap_moe_expert_parallel_comm>{}));

  static constexpr op_type_set op_types = used_op_types(s, r);

  /// The programs of every rank for one step of `w`.
  static std::vector<program> generate(const workload& w) { return compose_step(s, r, w); }
};

}  // namespace overlap::schedule
