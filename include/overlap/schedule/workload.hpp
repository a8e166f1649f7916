#pragma once
/// @file
/// The run-time sizes of a step: the model and the batch, with Megatron-Core's field names. The
/// config type gives the layout, the overlap families, the precision, the experts and the
/// recompute policy; a workload gives what the settings do not hold, so nothing is said twice.
///
/// The model is a decoder-only transformer with RMSNorm, grouped-query attention and a gated
/// (SwiGLU) MLP; with `num_moe_experts` set in the settings every layer's MLP is a mixture of
/// experts (a router, `moe_router_topk` of the experts per token, plus shared experts of
/// `moe_shared_expert_intermediate_size`). The embedding sits on the first pipeline stage, the
/// final norm, output layer and loss on the last.
///
/// With `multi_latent_attention` (DeepSeek-V2/V3) the attention is Megatron-Core's
/// MLASelfAttention: queries from a `q_lora_rank` latent (0: Core's None, straight from the hidden
/// state), keys and values from a `kv_lora_rank` latent, each head `qk_head_dim` wide plus a rotary
/// part of `qk_pos_emb_head_dim` (the key's shared by all heads), values `v_head_dim` wide.
/// num_query_groups and kv_channels then say nothing. The down projections are replicated over
/// tensor parallelism (TELinear, "duplicated") and run on the local sequence shard; the up
/// projections are column-parallel. The step runs the four projections as the one qkv GEMM slot
/// (of their summed flops) and gathers the latents, not the hidden state, around it.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <overlap/schedule/optimizer_state.hpp>

namespace overlap::schedule {

struct workload {
  int num_layers = 8;     ///< transformer layers of the whole model
  int micro_batches = 4;  ///< per step and data-parallel rank
  int seq_length = 4096;
  int micro_batch_size = 1;
  int hidden_size = 4096;
  int ffn_hidden_size = 14336;  ///< gated MLP: fc1 is hidden x 2 ffn, fc2 ffn x hidden
  int num_attention_heads = 32;
  int num_query_groups = 0;  ///< GQA key/value heads; 0: as many as attention heads
  int kv_channels = 0;       ///< head size; 0: hidden_size / num_attention_heads
  int vocab_size = 128256;
  bool share_embeddings_and_output_weights = false;
  int moe_router_topk = 0;      ///< experts per token (MoE models)
  int moe_ffn_hidden_size = 0;  ///< one routed expert's gated MLP size
  bool multi_latent_attention = false;
  int q_lora_rank = 0;           ///< MLA: the query latent; 0: none (q projected from the hidden state)
  int kv_lora_rank = 512;        ///< MLA: the key/value latent
  int qk_head_dim = 128;         ///< MLA: a head's query/key width without the rotary part
  int qk_pos_emb_head_dim = 64;  ///< MLA: the rotary part of a head's query/key
  int v_head_dim = 128;          ///< MLA: a head's value width
  /// Uneven pipelines (pipeline_split.hpp): at most one of the layout string, the first / last
  /// stage counts (0: not set) and the embedding / loss counted as layers.
  std::string pipeline_layout{};  ///< pipeline_model_parallel_layout, e.g. "Et|(tt|)*30mL"
  int num_layers_in_first_pipeline_stage = 0;
  int num_layers_in_last_pipeline_stage = 0;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  /// MoE models: which transformer layers are MoE (1) and which dense (0), one entry a layer
  /// (Megatron-Core's moe_layer_freq as a list; DeepSeek-V3's first three are dense); empty:
  /// every layer. Multi-token-prediction layers are MoE. Dense layers run the gated MLP of
  /// `ffn_hidden_size`.
  std::vector<int> moe_layer_pattern{};
  /// The optimizer's precision fields: what its state takes a parameter (optimizer_state.hpp).
  optimizer_precision optimizer{};
  /// The fp8 recipe is MXFP8 (mixed_precision.fp8_recipe "mxfp8"): with fp8_param_gather, how the
  /// parameters are kept and gathered (parameter_storage.hpp).
  bool fp8_recipe_mxfp8 = false;

  /// Whether transformer layer `l` of an MoE model is MoE (the MTP layers, past num_layers, are).
  bool moe_layer(int l) const {
    return moe_layer_pattern.empty() || l < 0 || l >= static_cast<int>(moe_layer_pattern.size()) ||
           moe_layer_pattern[static_cast<std::size_t>(l)] != 0;
  }

  constexpr std::int64_t tokens() const { return std::int64_t{seq_length} * micro_batch_size; }
  constexpr std::int64_t head_size() const { return kv_channels > 0 ? kv_channels : hidden_size / num_attention_heads; }
  constexpr std::int64_t query_groups() const { return num_query_groups > 0 ? num_query_groups : num_attention_heads; }
  /// A head's query/key width and value width.
  constexpr std::int64_t query_head_dim() const {
    return multi_latent_attention ? std::int64_t{qk_head_dim} + qk_pos_emb_head_dim : head_size();
  }
  constexpr std::int64_t value_head_dim() const { return multi_latent_attention ? v_head_dim : head_size(); }
  /// Width of the attention's output before the projection (its heads' values).
  constexpr std::int64_t attention_output_width() const { return num_attention_heads * value_head_dim(); }
  /// Width of the attention's query, key and value over all heads (what core attention reads):
  /// GQA's key/value groups, MLA's per-head keys and values.
  constexpr std::int64_t qkv_output_width() const {
    const std::int64_t kv_heads = multi_latent_attention ? num_attention_heads : query_groups();
    return num_attention_heads * query_head_dim() + kv_heads * (query_head_dim() + value_head_dim());
  }
  /// Width of the rotary embedding's tensors (q and k, whole): all of GQA's q and k; MLA's
  /// rotary parts of q (per head) and of k (one for all heads).
  constexpr std::int64_t rotary_width() const {
    return multi_latent_attention ? (std::int64_t{num_attention_heads} + 1) * qk_pos_emb_head_dim
                                  : (num_attention_heads + query_groups()) * head_size();
  }
  /// The width the qkv slot's all-gather carries (and its input gradient's reduce-scatter):
  /// the hidden state; with MLA the latents the up projections read (the hidden state for q
  /// without a q latent), plus the key's rotary part.
  constexpr std::int64_t qkv_gathered_width() const {
    return multi_latent_attention
               ? (q_lora_rank > 0 ? q_lora_rank : hidden_size) + std::int64_t{kv_lora_rank} + qk_pos_emb_head_dim
               : hidden_size;
  }

  // Parameters of one layer's tensors (whole, before tensor parallelism).
  /// The qkv slot: GQA's fused projection; MLA's four projections and the two latent norms
  /// (Megatron-LM's count in theoretical_memory_usage.py).
  constexpr std::int64_t qkv_parameters() const {
    if (!multi_latent_attention)
      return std::int64_t{hidden_size} * (num_attention_heads * head_size() + 2 * query_groups() * head_size());
    return mla_replicated_parameters() + mla_up_parameters();
  }
  /// MLA's parameters every tensor-parallel rank holds whole: the down projections and the
  /// latent norms (0 without MLA).
  constexpr std::int64_t mla_replicated_parameters() const {
    if (!multi_latent_attention) return 0;
    const std::int64_t h = hidden_size;
    return (q_lora_rank > 0 ? std::int64_t{q_lora_rank} * (h + 1) : 0) +
           (std::int64_t{kv_lora_rank} + qk_pos_emb_head_dim) * h + kv_lora_rank;
  }
  /// MLA's column-parallel up projections (q straight from the hidden state without a q latent).
  constexpr std::int64_t mla_up_parameters() const {
    if (!multi_latent_attention) return 0;
    const std::int64_t heads = num_attention_heads;
    return (q_lora_rank > 0 ? std::int64_t{q_lora_rank} : hidden_size) * heads * query_head_dim() +
           std::int64_t{kv_lora_rank} * heads * (std::int64_t{qk_head_dim} + v_head_dim);
  }
  /// The qkv slot's parameters on one of `tp` tensor-parallel ranks.
  constexpr std::int64_t qkv_local_parameters(int tp) const {
    return mla_replicated_parameters() + (qkv_parameters() - mla_replicated_parameters()) / tp;
  }
  constexpr std::int64_t proj_parameters() const { return attention_output_width() * hidden_size; }
  constexpr std::int64_t fc1_parameters() const { return std::int64_t{hidden_size} * 2 * ffn_hidden_size; }
  constexpr std::int64_t fc2_parameters() const { return std::int64_t{ffn_hidden_size} * hidden_size; }
  constexpr std::int64_t norm_parameters() const { return hidden_size; }
  constexpr std::int64_t router_parameters(int experts) const { return std::int64_t{hidden_size} * experts; }
  /// One gated expert MLP of `ffn` (routed: moe_ffn_hidden_size; shared: the shared size).
  constexpr std::int64_t expert_parameters(std::int64_t ffn) const { return 3 * std::int64_t{hidden_size} * ffn; }
  constexpr std::int64_t embedding_parameters() const { return std::int64_t{vocab_size} * hidden_size; }
  /// A multi-token-prediction layer's projection (eh_proj: 2 hidden to hidden) and the two norms
  /// before it (of the embedding and of the hidden state).
  constexpr std::int64_t mtp_projection_parameters() const { return 2 * std::int64_t{hidden_size} * hidden_size; }
  constexpr std::int64_t mtp_norm_parameters() const { return 2 * std::int64_t{hidden_size}; }

  /// The largest extents (and batch counts) the step's GEMMs take from these sizes, whole, before
  /// tensor parallelism, each named by what makes it; `mtp`: with multi-token prediction, whose
  /// projection reads twice the hidden state. In double: sizes near INT_MAX overflow 64 bits
  /// (the widths above are only taken once these are known to fit).
  struct named_extent {
    std::string_view what;
    double extent;
  };
  constexpr std::array<named_extent, 10> gemm_extents(bool mtp) const {
    const double heads = num_attention_heads, tokens_ = static_cast<double>(seq_length) * micro_batch_size;
    const double q = static_cast<double>(query_head_dim()), v = static_cast<double>(value_head_dim());
    const double kv_heads = multi_latent_attention ? heads : static_cast<double>(query_groups());
    return {{{"seq_length x micro_batch_size", tokens_},
             {"the routed tokens (seq_length x micro_batch_size x moe_router_topk)",
              tokens_ * std::max(moe_router_topk, 1)},
             {"micro_batch_size x num_attention_heads", static_cast<double>(micro_batch_size) * heads},
             {mtp ? "2 x hidden_size (the MTP projection)" : "hidden_size", (mtp ? 2.0 : 1.0) * hidden_size},
             {"2 x ffn_hidden_size", 2.0 * ffn_hidden_size},
             {"2 x moe_ffn_hidden_size", 2.0 * moe_ffn_hidden_size},
             {"vocab_size", static_cast<double>(vocab_size)},
             {"the query, key and value width", heads * q + kv_heads * (q + v)},
             {"the attention output width", heads * v},
             {"the width the qkv projection reads", static_cast<double>(qkv_gathered_width())}}};
  }

  /// Forward flops of a GEMM with `parameters` weights over one micro-batch (whole, before TP).
  constexpr double gemm_flops(std::int64_t parameters) const {
    return 2.0 * static_cast<double>(tokens()) * static_cast<double>(parameters);
  }
  /// Forward flops of causal core attention (scores and values, half of the square computed).
  constexpr double attention_core_flops() const {
    return static_cast<double>(tokens()) * seq_length * num_attention_heads *
           static_cast<double>(query_head_dim() + value_head_dim());
  }
};

/// The sizes the planner was made for: about eight times the largest of each trained today (a
/// million-token context, hidden 64 Ki). Beyond them a step still generates and simulates (every
/// measured cost held at the edge of what was measured), but the result is an extrapolation far
/// past any measurement, which `beyond_planned` says.
using workload_size = int workload::*;  // an alias: nvcc's front end parenthesizes a bare member pointer
struct workload_bound {
  std::string_view field;
  workload_size member;
  std::int64_t most;
};
inline constexpr std::array<workload_bound, 14> planned_bounds{{
    {"num_layers", &workload::num_layers, 1024},
    {"micro_batches", &workload::micro_batches, 65536},
    {"seq_length", &workload::seq_length, 1 << 20},
    {"micro_batch_size", &workload::micro_batch_size, 1024},
    {"hidden_size", &workload::hidden_size, 1 << 16},
    {"ffn_hidden_size", &workload::ffn_hidden_size, 1 << 18},
    {"num_attention_heads", &workload::num_attention_heads, 1024},
    {"vocab_size", &workload::vocab_size, 1 << 21},
    {"moe_ffn_hidden_size", &workload::moe_ffn_hidden_size, 1 << 18},
    {"q_lora_rank", &workload::q_lora_rank, 1 << 16},
    {"kv_lora_rank", &workload::kv_lora_rank, 1 << 16},
    {"qk_head_dim", &workload::qk_head_dim, 1 << 12},
    {"qk_pos_emb_head_dim", &workload::qk_pos_emb_head_dim, 1 << 12},
    {"v_head_dim", &workload::v_head_dim, 1 << 12},
}};

/// One line per size of `w` beyond `planned_bounds` (none: every size within them).
inline std::vector<std::string> beyond_planned(const workload& w) {
  std::vector<std::string> out;
  for (const workload_bound& b : planned_bounds)
    if (w.*b.member > b.most)
      out.push_back(std::string(b.field) + " = " + std::to_string(w.*b.member) +
                    " is far beyond what the planner "
                    "was made for (at most " +
                    std::to_string(b.most) +
                    "): every cost below is extrapolated past "
                    "any measurement");
  return out;
}

}  // namespace overlap::schedule
