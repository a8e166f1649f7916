#pragma once
// overlap-plan: a Megatron-Bridge config tree (tree.hpp) read into `overlap::settings` and a
// `schedule::workload`, and written back. The field names come from the reflected field lists
// (<overlap/settings/reflect.hpp>); what this file adds is where Bridge keeps each field, and
// upstream's precedence where it keeps one value in two places (upstream-rules.md PREC-4..6,
// DP-6/7, mixed precision applied over the model). Unknown fields are ignored; fields this tool
// knows but cannot honour become notes.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <overlap/config/ub_presets.hpp>
#include <overlap/rules/derive.hpp>
#include <overlap/rules/upstream.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/reflect_settings.hpp>

#include "tree.hpp"

BOOST_HANA_ADAPT_STRUCT(overlap::schedule::workload, num_layers, micro_batches, seq_length, micro_batch_size,
                        hidden_size, ffn_hidden_size, num_attention_heads, num_query_groups, kv_channels,
                        vocab_size, share_embeddings_and_output_weights, moe_router_topk, moe_ffn_hidden_size,
                        multi_latent_attention, q_lora_rank, kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim,
                        pipeline_layout, num_layers_in_first_pipeline_stage, num_layers_in_last_pipeline_stage,
                        account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split);

namespace overlap_plan {

namespace ov = overlap;

/// What the command line adds to a config.
struct read_options {
  std::optional<int> world_size{};          ///< --world-size: dp = world / (tp x pp x cp)
  std::optional<ov::gpu_model> gpu{};        ///< --gpu
  std::optional<ov::version> te_version{};   ///< --te-version
  bool process_environment = true;           ///< the launcher's environment wins over env_vars (PREC-9)
  /// Without --world-size and comm_overlap.data_parallel_size: an input_error (the tool: a run has a
  /// world size, and dp 1 would check a different job); false: dp 1, with a note.
  bool require_world_size = false;
};

/// A config read: the settings the rule table checks, the workload the simulator runs, where each
/// settings field was read from, and what the reader has to say about the input.
struct bridge_config {
  ov::settings settings;
  ov::schedule::workload workload;
  std::map<std::string, std::string> path_of;  ///< settings field -> the Bridge path that holds it
  std::set<std::string> in_document;           ///< those paths the document holds (a Hydra `a.b=v` needs one)
  std::vector<std::string> notes;              ///< precedence, dp derivation, fields not honoured
  std::vector<std::string> not_modelled;       ///< those notes of fields that shape the run, not modelled
  std::vector<std::string> missing_workload;   ///< model/train fields the simulator needs and lacks
  int global_batch_size = 0;
  ov::upstream_reading upstream;               ///< `settings` as upstream runs them (rules/upstream.hpp)
};

namespace detail {

inline const json* find(const json& tree, std::string_view path) {
  const json* node = &tree;
  while (!path.empty()) {
    const auto dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (!node->is_object()) return nullptr;
    const auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
    path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
  }
  return node;
}
/// The value at `path`, or null when it is absent or null (Bridge's "not specified").
inline const json* given(const json& tree, std::string_view path) {
  const json* v = find(tree, path);
  return v && !v->is_null() ? v : nullptr;
}
inline bool section(const json& tree, std::string_view name) {
  const json* v = find(tree, name);
  return v && v->is_object();
}

template <class T>
using is_optional = ov::reflect::is_optional<T>;
template <class T>
using is_enum_set = ov::reflect::is_enum_set<T>;

[[noreturn]] inline void bad(const document& doc, const std::string& path, const std::string& what) {
  throw input_error(doc.at(path) + ": " + path + ": " + what);
}

/// An enum from its upstream spelling; Python enum dumps ("CudaGraphImpl.local") by the last part.
template <class E>
E to_enum(const document& doc, const std::string& path, const json& v) {
  std::string allowed;
  for (const std::string_view n : ov::enum_info<E>::names) (allowed += allowed.empty() ? "" : ", ") += n;
  if (!v.is_string()) bad(doc, path, "expected one of " + allowed + ", got " + shown(v));
  std::string text = v.get<std::string>();
  if (const auto dot = text.rfind('.'); dot != std::string::npos) text = text.substr(dot + 1);
  for (std::size_t i = 0; i < ov::enum_info<E>::count; ++i)
    if (ov::enum_info<E>::names[i] == text) return static_cast<E>(i);
  bad(doc, path, "unknown value " + shown(v) + "; expected one of " + allowed);
}

template <class I>
I to_integer(const document& doc, const std::string& path, const json& v) {
  if (v.is_boolean() || !v.is_number_integer())
    bad(doc, path, "expected an integer, got " + shown(v));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<I>::max()))
    bad(doc, path, "integer " + shown(v) + " is out of range");
  const std::int64_t x = v.get<std::int64_t>();
  if (x < std::numeric_limits<I>::min() || x > std::numeric_limits<I>::max())
    bad(doc, path, "integer " + shown(v) + " is out of range");
  return static_cast<I>(x);
}

inline bool to_bool(const document& doc, const std::string& path, const json& v) {
  if (!v.is_boolean()) bad(doc, path, "expected true or false, got " + shown(v));
  return v.get<bool>();
}

/// `pipeline_model_parallel_layout` as the layout string of schedule::parse_pipeline_layout.
/// Megatron-Core takes the string ("Et|(tt|)*30mL") or, as Bridge dumps its recipes, a list of
/// virtual stages, each a list of layer names (embedding, decoder, mtp, loss; case and spaces
/// ignored, as Core reads them): that list is written as the string, a stage's letters per stage.
inline std::string layout_text(const document& doc, const std::string& path, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  const std::string expected = "expected the layout as a string (\"Et|(tt|)*30mL\") or a list of stages, each a list of "
                               "layer names (embedding, decoder, mtp, loss)";
  if (!v.is_array() || v.empty()) bad(doc, path, expected + ", got " + shown(v));
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string stage = path + "[" + std::to_string(i) + "]";
    if (!v[i].is_array()) bad(doc, stage, expected + "; this stage is " + shown(v[i]));
    if (i > 0) out += '|';
    for (std::size_t j = 0; j < v[i].size(); ++j) {
      const std::string at = stage + "[" + std::to_string(j) + "]";
      if (!v[i][j].is_string()) bad(doc, at, "expected a layer name (embedding, decoder, mtp, loss), got " + shown(v[i][j]));
      std::string name;
      for (const char c : v[i][j].get<std::string>())
        if (c != ' ' && c != '\t') name += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      if (name == "embedding") out += 'E';
      else if (name == "decoder") out += 't';
      else if (name == "mtp") out += 'm';
      else if (name == "loss") out += 'L';
      else if (name == "encoder") bad(doc, at, "encoder layers in a layout are not supported (Megatron-Core refuses them too)");
      else bad(doc, at, "unknown layer name " + shown(v[i][j]) + "; expected embedding, decoder, mtp or loss");
    }
  }
  return out;
}

/// `moe_layer_freq` as workload::moe_layer_pattern, as Megatron-Core reads it: an integer N makes
/// every N-th layer MoE (layer i when i % N == 0); a list gives each layer, 1 MoE and 0 dense, one
/// entry a layer. Every layer MoE is the empty pattern.
inline std::vector<int> moe_layers(const document& doc, const std::string& path, const json& v, int num_layers) {
  std::vector<int> out;
  if (v.is_number_integer() && !v.is_boolean()) {
    const std::int64_t n = v.get<std::int64_t>();
    if (n < 1) bad(doc, path, "expected an integer >= 1 or a list of 0 and 1, got " + shown(v));
    if (n == 1) return out;
    for (int i = 0; i < num_layers; ++i) out.push_back(i % n == 0 ? 1 : 0);
    return out;
  }
  if (!v.is_array())
    bad(doc, path, "expected an integer or a list of 0 (dense) and 1 (MoE), one a layer, got " + shown(v) +
                       (v.is_string() ? " (write Python's expression as the list it makes)" : ""));
  if (static_cast<std::int64_t>(v.size()) != num_layers)
    bad(doc, path, "the list has " + std::to_string(v.size()) + " entries, model.num_layers is " + std::to_string(num_layers));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i].is_boolean() || !v[i].is_number_integer() || (v[i].get<std::int64_t>() != 0 && v[i].get<std::int64_t>() != 1))
      bad(doc, path + "[" + std::to_string(i) + "]", "expected 0 (dense) or 1 (MoE), got " + shown(v[i]));
    out.push_back(static_cast<int>(v[i].get<std::int64_t>()));
  }
  if (std::all_of(out.begin(), out.end(), [](int x) { return x == 1; })) out.clear();
  return out;
}

/// A list of enum names: a YAML list, or one string split on ',' (upstream CG-1). "full" and ""
/// mean the whole layer, which is the empty list.
template <class E>
ov::enum_set<E> to_enum_set(const document& doc, const std::string& path, const json& v) {
  ov::enum_set<E> out;
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    if (text.empty() || text == "full") return out;
    std::size_t start = 0;
    for (std::size_t i = 0, item = 0; i <= text.size(); ++i) {
      if (i != text.size() && text[i] != ',') continue;
      out.insert(to_enum<E>(doc, path + "[" + std::to_string(item++) + "]", json(text.substr(start, i - start))));
      start = i + 1;
    }
    return out;
  }
  if (!v.is_array()) bad(doc, path, "expected a list of names, got " + shown(v));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (v[i].is_null()) continue;
    out.insert(to_enum<E>(doc, p, v[i]));
  }
  return out;
}

inline ov::version to_version(const document& doc, const std::string& path, const json& v) {
  ov::version out;
  if (!v.is_string()) bad(doc, path, "expected a version \"major.minor.patch\", got " + shown(v));
  const std::string text = v.get<std::string>();
  int parts[3] = {0, 0, 0};
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const auto end = text.find('.', start);
    const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), parts[i]);
    if (part.empty() || ec != std::errc{} || p != part.data() + part.size() || parts[i] < 0)
      bad(doc, path, "expected a version \"major.minor.patch\", got " + shown(v));
    if (end == std::string::npos) break;
    start = end + 1;
    if (i == 2) bad(doc, path, "expected a version \"major.minor.patch\", got " + shown(v));
  }
  out.major = parts[0];
  out.minor = parts[1];
  out.patch = parts[2];
  return out;
}

/// The 19 upstream presets by name.
inline std::optional<ov::ub::user_config> preset(std::string_view name) {
  using namespace ov::ub;
  const user_config all[] = {
      user_config_of<userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192>(),
      user_config_of<userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192>(),
      user_config_of<userbuffers_bf16_b200_h8192_tp2_mbs1_seqlen8192>(),
      user_config_of<userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192>(),
      user_config_of<userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192>(),
      user_config_of<userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192>(),
      user_config_of<userbuffers_bf16_b200_h16384_tp4_cp2_mbs1_seqlen8192>(),
      user_config_of<userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192>(),
      user_config_of<userbuffers_fp8_h100_h8192_tp2_mbs1_seqlen4096_lora>(),
      user_config_of<userbuffers_fp8_h100_h16384_tp4_mbs1_seqlen2048_lora>(),
      user_config_of<userbuffers_bf16_h100_h6144_tp2_mbs2_seqlen2048>(),
      user_config_of<userbuffers_fp8_h100_h6144_tp2_mbs2_seqlen2048>(),
      user_config_of<userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048>(),
      user_config_of<userbuffers_fp8_h100_h12288_tp4_mbs1_seqlen2048>(),
      user_config_of<userbuffers_bf16_b200_h12288_tp4_mbs1_seqlen2048>(),
      user_config_of<userbuffers_fp8_b200_h12288_tp4_mbs1_seqlen2048>(),
      user_config_of<userbuffers_bf16_b200_h6144_tp2_mbs1_seqlen4096>(),
      user_config_of<userbuffers_bf16_b200_h18432_tp8_mbs1_seqlen4096>(),
      user_config_of<userbuffers_fp8_b200_h18432_tp8_mbs1_seqlen4096>(),
  };
  for (const user_config& c : all)
    if (c.preset_name == name) return c;
  return std::nullopt;
}

/// One GEMM slot of a `TransformerLayerTPOverlapCfg` dump: its method (the `method` field, or the
/// dataclass named by `_target_`), and the knobs it gives over TE-6's defaults for that method.
inline ov::ub::slot to_slot(const document& doc, const std::string& path, const json& v,
                            std::vector<std::string>& notes) {
  if (!v.is_object()) bad(doc, path, "expected a slot mapping (method, num_sm, ...), got " + shown(v));
  std::optional<ov::ub::method> m;
  if (const json* x = given(v, "method")) m = to_enum<ov::ub::method>(doc, path + ".method", *x);
  if (const json* t = given(v, "_target_"); !m && t && t->is_string()) {
    const std::string target = t->get<std::string>();
    if (target.ends_with("BulkOverlapCfg")) m = ov::ub::method::bulk;
    if (target.ends_with("RingExchangeOverlapCfg")) m = ov::ub::method::ring_exchange;
    if (target.ends_with("PipelineOverlapCfg")) m = ov::ub::method::pipeline;
  }
  if (!m || *m == ov::ub::method::none)
    bad(doc, path, "a slot needs method bulk, ring_exchange or pipeline (or a _target_ naming its dataclass)");
  ov::ub::slot out = ov::ub::default_knobs(*m);
  ov::reflect::for_each_field(out, [&](std::string_view name, auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    const std::string p = path + "." + std::string(name);
    const json* x = given(v, name);
    if (!x || name == "method") return;
    if constexpr (std::is_same_v<T, bool>) {
      // Upstream's pipeline default fp8_buf=(False,) dumps as a list; read by its element (RULES.md).
      if (x->is_array() && x->size() == 1 && (*x)[0].is_boolean()) {
        notes.push_back(p + " = " + shown(*x) + " (a tuple, truthy in Python) is read as " +
                        ((*x)[0].get<bool>() ? "true" : "false") + ", as RULES.md says for upstream's (False,) default");
        member = (*x)[0].get<bool>();
      } else {
        member = to_bool(doc, p, *x);
      }
    } else if constexpr (std::is_same_v<T, int>) {
      member = to_integer<int>(doc, p, *x);
    }
  });
  return out;
}

inline ov::ub::user_config to_user_config(const document& doc, const std::string& path, const json& v,
                                          std::vector<std::string>& notes) {
  if (v.is_string()) {
    const std::string name = v.get<std::string>();
    if (auto p = preset(name)) return *p;
    if (name.ends_with(".yaml") || name.ends_with(".yml"))
      bad(doc, path, "a userbuffer YAML file (" + quote_text(name) +
                         ") is not read by overlap-plan; give the preset's name or its slots inline");
    bad(doc, path, "unknown userbuffer preset " + quote_text(name) + " (the 19 upstream names are accepted)");
  }
  if (!v.is_object()) bad(doc, path, "expected a preset name or a mapping of GEMM slots, got " + shown(v));
  ov::ub::user_config out;
  for (const ov::ub::slot_id id : ov::ub::all_slots) {
    const std::string name(ov::ub::to_string(id));
    if (const json* x = given(v, name)) out.slots[id] = to_slot(doc, path + "." + name, *x, notes);
  }
  return out;
}

/// Where Bridge keeps a settings field: `read`, in precedence order (the first that holds a value
/// wins; a later one that disagrees gets a note saying `why`), and `overwritten`, places Bridge
/// replaces with the derived-or-user value whatever they hold (a note when they differ from it).
struct places {
  std::vector<std::string> read;
  std::vector<std::string> overwritten{};
  std::string why{};
};

inline constexpr std::string_view comm_overlap_owned[] = {
    "tp_comm_overlap", "overlap_p2p_comm", "batch_p2p_comm", "defer_embedding_wgrad_compute",
    "wgrad_deferral_limit", "overlap_moe_expert_parallel_comm", "delay_wgrad_compute",
    "tp_comm_bootstrap_backend", "tp_comm_overlap_cfg"};
inline constexpr std::string_view ddp_owned[] = {"overlap_grad_reduce", "overlap_param_gather",
                                                 "align_param_gather", "bucket_size"};

inline bool in(std::string_view name, const auto& list) {
  for (const std::string_view x : list)
    if (x == name) return true;
  return false;
}

inline bool ddp_distributed_optimizer(const json& tree) {
  const json* v = given(tree, "ddp.use_distributed_optimizer");
  return v && v->is_boolean() && v->get<bool>();
}

inline places places_of(std::string_view field, const json& tree) {
  const std::string name(field);
  const bool comm_overlap = section(tree, "comm_overlap");
  if (in(field, comm_overlap_owned)) {
    if (comm_overlap)
      return {{"comm_overlap." + name}, {"model." + name}, "Bridge overwrites the model's value with comm_overlap's (PREC-4)"};
    return {{"model." + name}};
  }
  const bool distributed = ddp_distributed_optimizer(tree);
  const bool on_optimizer = field == "overlap_param_gather_with_optimizer_step";
  const std::string home = on_optimizer ? "optimizer." : "ddp.";
  if (in(field, ddp_owned) || on_optimizer) {
    std::vector<std::string> also;
    if (field == "overlap_param_gather") also.push_back("optimizer.overlap_param_gather");
    if (distributed && comm_overlap) {
      places p{{"comm_overlap." + name}, {home + name}, "with ddp.use_distributed_optimizer, Bridge copies comm_overlap's value over it (PREC-6)"};
      p.overwritten.insert(p.overwritten.end(), also.begin(), also.end());
      return p;
    }
    places p{{home + name}, {}, "Bridge ignores comm_overlap's DP fields without ddp.use_distributed_optimizer (PREC-5)"};
    p.read.insert(p.read.end(), also.begin(), also.end());
    p.read.push_back("comm_overlap." + name);
    return p;
  }
  if (field == "num_buckets") return {{"ddp.num_buckets"}};
  if (field == "fp8" || field == "fp4" || field == "fp8_param_gather")
    return {{"mixed_precision." + name, "model." + name, "ddp." + name}, {},
            "Bridge applies the mixed_precision config over the model and ddp"};
  if (field == "grad_reduce_in_fp32")
    return {{"mixed_precision." + name, "ddp." + name}, {}, "Bridge applies the mixed_precision config over ddp"};
  return {{"model." + name}};
}

/// Fields that shape the run but that overlap-plan does not model: a note when they are set.
struct unhonoured {
  std::string_view path, why;
  double quiet_up_to = 1;  ///< a number up to this says the feature is off
  bool when_false = false; ///< a switch on by default: said when turned off
};
inline constexpr unhonoured not_honoured[] = {
    {"ddp.use_megatron_fsdp", "FSDP is out of scope: its DP schedule is not modelled or checked"},
    {"ddp.use_custom_fsdp", "FSDP is out of scope: its DP schedule is not modelled or checked"},
    {"ddp.num_distributed_optimizer_instances", "partial distributed optimizer (DP-14) is not modelled"},
    {"model.cpu_offloading", "CPU offloading is out of scope"},
    {"model.fine_grained_activation_offloading", "activation offloading is out of scope (EP-14 not checked)"},
    {"model.moe_enable_deepep", "deprecated flag (FX-9); set moe_token_dispatcher_type flex and moe_flex_dispatcher_backend deepep"},
    {"dataset.packing_buffer_size", "Energon native packing makes Bridge turn EP overlap and delayed wgrad off (EP-19); not modelled"},
    {"model.tp_comm_overlap_ag", "per-GEMM TP switches (TP-15) are not modelled: every all-gather is overlapped as "
                                 "its tp_comm_overlap_cfg slot says", 1, true},
    {"model.tp_comm_overlap_rs", "per-GEMM TP switches (TP-15) are not modelled: every reduce-scatter is overlapped as "
                                 "its tp_comm_overlap_cfg slot says", 1, true},
    {"mixed_precision.first_last_layers_bf16", "the first and last layers in bf16 are not modelled: every layer's "
                                               "GEMMs run in the recipe's format"},
    {"mixed_precision.fp8_dot_product_attention", "fp8 core attention is not modelled: attention runs in bf16"},
};

/// A workload field's name in Bridge's model config, where it differs.
constexpr std::string_view bridge_name(std::string_view field) {
  return field == "pipeline_layout" ? "pipeline_model_parallel_layout" : field;
}

/// The upstream defaults of the fields that upstream may turn off or ignore (rules::upstream), as
/// `to_yaml()` dumps them: the dataclass defaults of Megatron-Core's ModelParallelConfig,
/// TransformerConfig, DistributedDataParallelConfig and OptimizerConfig. (Bridge's CommOverlapConfig
/// defaults every field but tp_comm_overlap to null, which reads as unset.) A dump holds every
/// default, so such a value says nothing about what a person asked for.
struct upstream_default {
  std::string_view path, value;  ///< the value as JSON text
};
inline constexpr upstream_default upstream_defaults[] = {
    {"model.tp_comm_overlap", "false"},
    {"model.tp_comm_overlap_cfg", "null"},
    {"model.sequence_parallel", "false"},
    {"model.overlap_p2p_comm", "false"},
    {"model.batch_p2p_comm", "true"},
    {"model.moe_shared_expert_overlap", "false"},
    {"model.moe_token_dispatcher_type", "\"allgather\""},
    {"model.moe_flex_dispatcher_backend", "\"deepep\""},
    {"ddp.overlap_grad_reduce", "false"},
    {"ddp.overlap_param_gather", "false"},
    {"ddp.align_param_gather", "false"},
    {"optimizer.overlap_param_gather", "false"},
    {"optimizer.overlap_param_gather_with_optimizer_step", "false"},
};

}  // namespace detail

/// Reads `doc` (after overrides) into settings and a workload. Throws input_error (exit status 2)
/// on a value of the wrong type or outside what a field can hold.
inline bridge_config read_config(const document& doc, const read_options& opt = {}) {
  using namespace detail;
  const json& tree = doc.tree;
  bridge_config out;
  ov::settings& s = out.settings;
  auto& notes = out.notes;

  for (const char* name : {"model", "comm_overlap", "ddp", "optimizer", "mixed_precision", "train", "dataset",
                           "checkpoint", "env_vars", "overlap_plan"}) {
    const json* v = find(tree, name);
    if (v && !v->is_null() && !v->is_object() && !(std::string_view(name) == "mixed_precision" && v->is_string()))
      bad(doc, name, "expected a section (a mapping), got " + shown(*v));
  }
  if (!section(tree, "model")) notes.push_back("no model section: every model field takes upstream's default");

  // Reads the first place of `p` that holds a value; notes later places that disagree, and keeps
  // the overwritten ones to compare with the resolved value at the end.
  struct overwritten_value {
    std::string field, path, why;
    json value;
  };
  std::vector<overwritten_value> overwritten;
  const auto pick = [&](std::string_view field, const places& p) -> std::optional<std::pair<std::string, json>> {
    std::optional<std::pair<std::string, json>> winner;
    for (const std::string& path : p.read) {
      const json* v = given(tree, path);
      if (!v) continue;
      if (!winner) {
        winner.emplace(path, *v);
        continue;
      }
      if (*v != winner->second)
        notes.push_back(path + " = " + shown(*v) + " disagrees with " + winner->first + " = " +
                        shown(winner->second) + "; " + (p.why.empty() ? "the first one wins" : p.why) +
                        ", so " + std::string(field) + " is read from " + winner->first);
    }
    for (const std::string& path : p.overwritten)
      if (const json* v = given(tree, path)) overwritten.push_back({std::string(field), path, p.why, *v});
    return winner;
  };

  ov::reflect::for_each_field(s, [&](std::string_view field, auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    const places p = places_of(field, tree);
    out.path_of[std::string(field)] = p.read.front();
    // Fields with their own reading below.
    if (field == "data_parallel_size" || field == "distributed_optimizer" || field == "precision" ||
        field == "fp8" || field == "fp4" || field == "use_dist_ckpt" || field == "gpu" || field == "te_version" ||
        field == "cuda_device_max_connections" || field == "layernorm_sm_margin" || field == "cuda_graph_modules")
      return;
    const auto got = pick(field, p);
    if (!got) return;
    const auto& [path, v] = *got;
    out.path_of[std::string(field)] = path;
    if (path.starts_with("comm_overlap.") && in(field, ddp_owned) && !ddp_distributed_optimizer(tree))
      notes.push_back(path + " is ignored by Bridge without ddp.use_distributed_optimizer (PREC-5); it is checked "
                      "here as requested, so the rules name what it needs");
    using V = typename std::conditional_t<is_optional<T>::value, T, std::optional<T>>::value_type;
    V value{};
    if constexpr (std::is_same_v<V, bool>) {
      value = to_bool(doc, path, v);
    } else if constexpr (std::is_same_v<V, int> || std::is_same_v<V, std::int64_t>) {
      value = to_integer<V>(doc, path, v);
      if (field.ends_with("_parallel_size") && value < 1)
        bad(doc, path, "a parallel size must be at least 1, got " + shown(v));
    } else if constexpr (std::is_enum_v<V>) {
      value = to_enum<V>(doc, path, v);
    } else if constexpr (is_enum_set<V>::value) {
      value = to_enum_set<typename is_enum_set<V>::element>(doc, path, v);
    } else if constexpr (std::is_same_v<V, ov::ub::user_config>) {
      value = to_user_config(doc, path, v, notes);
    }
    member = value;
  });

  // Precision: mixed_precision (a recipe name or a config) applied over the model's flags.
  {
    const auto flag = [&](const std::string& path) -> std::optional<bool> {
      const json* v = given(tree, path);
      if (!v) return std::nullopt;
      return to_bool(doc, path, *v);
    };
    std::optional<bool> bf16, fp16;
    std::string from;
    if (const json* mp = given(tree, "mixed_precision"); mp && mp->is_string()) {
      const std::string recipe = mp->get<std::string>();
      from = "mixed_precision";
      if (recipe.starts_with("bf16")) bf16 = true;
      else if (recipe.starts_with("fp16")) fp16 = true;
      else notes.push_back("mixed_precision recipe " + quote_text(recipe) + " is not known here; precision read from the model");
      if (recipe.find("fp8") != std::string::npos) {
        s.fp8 = true;
        out.path_of["fp8"] = "mixed_precision";
      }
      if (recipe.find("fp4") != std::string::npos) {
        s.fp4 = true;
        out.path_of["fp4"] = "mixed_precision";
      }
    } else {
      bf16 = flag("mixed_precision.bf16");
      fp16 = flag("mixed_precision.fp16");
      if (bf16 || fp16) from = "mixed_precision";
    }
    const std::optional<bool> model_bf16 = flag("model.bf16"), model_fp16 = flag("model.fp16");
    if (from.empty()) {
      bf16 = model_bf16;
      fp16 = model_fp16;
      from = "model";
    } else if ((model_bf16 && model_bf16 != bf16.value_or(false)) || (model_fp16 && model_fp16 != fp16.value_or(false))) {
      notes.push_back("model.bf16/fp16 disagree with mixed_precision; Bridge applies mixed_precision over the model, "
                      "so precision is read from mixed_precision");
    }
    if (bf16.value_or(false) && fp16.value_or(false))
      bad(doc, from + ".bf16", "bf16 and fp16 are both true; choose one");
    s.precision = bf16.value_or(false) ? ov::dtype::bf16 : fp16.value_or(false) ? ov::dtype::fp16 : ov::dtype::fp32;
    out.path_of["precision"] = from + (s.precision == ov::dtype::fp16 ? ".fp16" : ".bf16");
    // fp8 / fp4: a format string ("hybrid", "e4m3"; "e2m1") or a flag, mixed_precision over the model.
    const auto format = [&](const char* field, bool& member, const char* example) {
      if (member) return;
      const auto got = pick(field, places_of(field, tree));
      if (!got) return;
      const auto& [path, v] = *got;
      out.path_of[field] = path;
      if (v.is_boolean()) member = v.get<bool>();
      else if (v.is_string()) member = !v.get<std::string>().empty();
      else bad(doc, path, std::string("expected an ") + field + " format (" + example + ") or null, got " + shown(v));
    };
    format("fp8", s.fp8, "\"hybrid\", \"e4m3\"");
    format("fp4", s.fp4, "\"e2m1\"");
  }

  // The distributed optimizer: Bridge derives DP overlap from ddp's flag alone (PREC-5), then
  // turns both on when either is (DP-6).
  {
    const json* d = given(tree, "ddp.use_distributed_optimizer");
    const json* o = given(tree, "optimizer.use_distributed_optimizer");
    const bool ddp = d && to_bool(doc, "ddp.use_distributed_optimizer", *d);
    const bool opt = o && to_bool(doc, "optimizer.use_distributed_optimizer", *o);
    s.distributed_optimizer = ddp || opt;
    out.path_of["distributed_optimizer"] = d || !o ? "ddp.use_distributed_optimizer" : "optimizer.use_distributed_optimizer";
    if (d && o && ddp != opt)
      notes.push_back(std::string("ddp.use_distributed_optimizer = ") + (ddp ? "true" : "false") +
                      " disagrees with optimizer.use_distributed_optimizer = " + (opt ? "true" : "false") +
                      "; Bridge turns both on (DP-6)" +
                      (ddp ? "" : ", but derives DP overlap from ddp's false (PREC-5), so the DP overlap fields keep ddp's values"));
    if (opt && !ddp) {
      // PREC-5: no DP derivation; ddp's own values (Core default false) stand.
      for (auto* f : {&s.overlap_grad_reduce, &s.overlap_param_gather}) if (!*f) *f = false;
    }
  }

  // Checkpoint format: anything but plain torch is a distributed checkpoint (DP-10).
  if (const json* v = given(tree, "checkpoint.ckpt_format")) {
    if (!v->is_string()) bad(doc, "checkpoint.ckpt_format", "expected a format name, got " + shown(*v));
    s.use_dist_ckpt = v->get<std::string>() != "torch";
  }
  out.path_of["use_dist_ckpt"] = "checkpoint.ckpt_format";

  // CUDA graph modules: cuda_graph_modules and the deprecated cuda_graph_scope together (CG-1).
  for (const char* path : {"model.cuda_graph_modules", "model.cuda_graph_scope"})
    if (const json* v = given(tree, path)) {
      s.cuda_graph_modules.bits |= to_enum_set<ov::graph_module>(doc, path, *v).bits;
      out.path_of["cuda_graph_modules"] = path;
    }
  if (!out.path_of.count("cuda_graph_modules")) out.path_of["cuda_graph_modules"] = "model.cuda_graph_modules";
  if (const json* v = given(tree, "model.moe_layer_recompute"); v && to_bool(doc, "model.moe_layer_recompute", *v)) {
    s.recompute_modules.insert(ov::module::moe);
    notes.push_back("model.moe_layer_recompute (deprecated) adds moe to recompute_modules, as Core does");
  }

  // This tool's own section and the command line: the GPU and the Transformer Engine version.
  if (const json* v = given(tree, "overlap_plan.gpu")) s.gpu = to_enum<ov::gpu_model>(doc, "overlap_plan.gpu", *v);
  if (const json* v = given(tree, "overlap_plan.te_version")) s.te_version = to_version(doc, "overlap_plan.te_version", *v);
  if (opt.gpu) s.gpu = opt.gpu;
  if (opt.te_version) s.te_version = opt.te_version;
  out.path_of["gpu"] = "--gpu";
  out.path_of["te_version"] = "--te-version";

  // The environment: env_vars (a recipe's), then the launcher's environment, which wins (PREC-9).
  const auto env = [&](const char* name, std::optional<int>& field, const char* settings_field) {
    const std::string path = std::string("env_vars.") + name;
    out.path_of[settings_field] = path;
    if (const json* v = given(tree, path)) {
      json x = *v;
      if (x.is_string()) {
        const json parsed = detail::plain_scalar(x.get<std::string>());
        if (parsed.is_number_integer()) x = parsed;
      }
      field = to_integer<int>(doc, path, x);
    }
    if (!opt.process_environment) return;
    if (const char* e = std::getenv(name)) {
      const json parsed = detail::plain_scalar(e);
      if (!parsed.is_number_integer() || parsed.get<std::int64_t>() < std::numeric_limits<int>::min() ||
          parsed.get<std::int64_t>() > std::numeric_limits<int>::max())
        throw input_error(std::string("environment: ") + name + "=" + quote_text(e) + " is not an integer");
      field = static_cast<int>(parsed.get<std::int64_t>());
      out.path_of[settings_field] = std::string("environment ") + name;
      notes.push_back(std::string(name) + "=" + e + " is taken from the environment, which wins over env_vars (PREC-9)");
    }
  };
  env("CUDA_DEVICE_MAX_CONNECTIONS", s.cuda_device_max_connections, "cuda_device_max_connections");
  env("NVTE_FWD_LAYERNORM_SM_MARGIN", s.layernorm_sm_margin, "layernorm_sm_margin");
  {
    std::optional<int> bwd;
    if (const json* v = given(tree, "env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN")) {
      json x = *v;
      if (x.is_string()) x = detail::plain_scalar(x.get<std::string>());
      bwd = to_integer<int>(doc, "env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN", x);
      if (bwd != s.layernorm_sm_margin)
        notes.push_back("env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN differs from NVTE_FWD_LAYERNORM_SM_MARGIN; one margin "
                        "(layernorm_sm_margin) is modelled, read from the forward one");
    }
  }

  // Workload: the model's sizes (Megatron's names) and the batch.
  {
    ov::schedule::workload& w = out.workload;
    ov::reflect::for_each_field(w, [&](std::string_view field, auto& member) {
      using T = std::remove_cvref_t<decltype(member)>;
      if (field == "micro_batches") return;
      std::vector<std::string> paths{"model." + std::string(detail::bridge_name(field))};
      if (field == "micro_batch_size") paths = {"train.micro_batch_size"};
      if (field == "seq_length") paths.push_back("dataset.seq_length");
      if (field == "vocab_size") paths.insert(paths.begin(), "model.padded_vocab_size");
      const auto got = pick(field, places{paths});
      if (!got) {
        // MLA's sizes: a dump of a model without MLA may lack them (q_lora_rank null: none).
        const bool mla = field == "multi_latent_attention" || field.find("lora_rank") != std::string_view::npos ||
                         field.find("head_dim") != std::string_view::npos;
        const bool optional_field = field == "num_query_groups" || field == "kv_channels" || mla ||
                                    field == "share_embeddings_and_output_weights" ||
                                    field == "moe_router_topk" || field == "moe_ffn_hidden_size" ||
                                    field == "pipeline_layout" || field.find("pipeline_s") != std::string_view::npos;
        if (!optional_field) out.missing_workload.push_back(paths.front());
        return;
      }
      const auto& [path, v] = *got;
      if constexpr (std::is_same_v<T, bool>) {
        member = to_bool(doc, path, v);
      } else if constexpr (std::is_same_v<T, std::string>) {
        member = detail::layout_text(doc, path, v);
      } else {
        member = to_integer<int>(doc, path, v);
        if (member < 0) bad(doc, path, "a model size cannot be negative, got " + shown(v));
      }
    });
    if (!s.num_moe_experts) {
      w.moe_router_topk = 0;
      w.moe_ffn_hidden_size = 0;
    } else if (const json* v = given(tree, "model.moe_layer_freq")) {
      w.moe_layer_pattern = detail::moe_layers(doc, "model.moe_layer_freq", *v, w.num_layers);
    }
    if (const json* v = given(tree, "train.global_batch_size")) out.global_batch_size = to_integer<int>(doc, "train.global_batch_size", *v);
    else out.missing_workload.push_back("train.global_batch_size");
    if (out.global_batch_size < 0) bad(doc, "train.global_batch_size", "cannot be negative");
  }

  // Data-parallel size: Bridge derives it from the world size (DP-4).
  {
    const long model_ranks = long{s.tensor_model_parallel_size} * s.pipeline_model_parallel_size * s.context_parallel_size;
    out.path_of["data_parallel_size"] = "comm_overlap.data_parallel_size";
    std::optional<int> given_dp;
    if (const json* v = given(tree, "comm_overlap.data_parallel_size")) {
      given_dp = to_integer<int>(doc, "comm_overlap.data_parallel_size", *v);
      if (*given_dp < 1) bad(doc, "comm_overlap.data_parallel_size", "a parallel size must be at least 1, got " + shown(*v));
    }
    if (opt.world_size) {
      if (*opt.world_size < 1 || *opt.world_size % model_ranks != 0)
        throw input_error("--world-size " + std::to_string(*opt.world_size) + " is not a multiple of tp x pp x cp = " +
                          std::to_string(model_ranks) + " (Bridge: world size not divisible by total model size, DP-4)");
      s.data_parallel_size = static_cast<int>(*opt.world_size / model_ranks);
      out.path_of["data_parallel_size"] = "--world-size";
      notes.push_back("data_parallel_size = " + std::to_string(s.data_parallel_size) + " = world size " +
                      std::to_string(*opt.world_size) + " / (tp x pp x cp = " + std::to_string(model_ranks) + "), as Bridge derives it (DP-4)");
      if (given_dp && *given_dp != s.data_parallel_size)
        notes.push_back("comm_overlap.data_parallel_size = " + std::to_string(*given_dp) + " is replaced by the one --world-size gives, as Bridge does");
    } else if (given_dp) {
      s.data_parallel_size = *given_dp;
    } else if (opt.require_world_size) {
      throw input_error("world size needed: give --world-size N (the job's GPUs; dp = N / (tp x pp x cp = " +
                        std::to_string(model_ranks) + "), as Bridge derives it) or comm_overlap.data_parallel_size");
    } else {
      notes.push_back("data_parallel_size = 1: give --world-size N (dp = N / (tp x pp x cp), as Bridge derives it) or "
                      "comm_overlap.data_parallel_size");
    }
  }
  if (out.global_batch_size > 0) {
    const long per_step = long{out.workload.micro_batch_size} * s.data_parallel_size;
    if (per_step > 0 && out.global_batch_size % per_step != 0)
      bad(doc, "train.global_batch_size", "global_batch_size " + std::to_string(out.global_batch_size) +
                                              " is not a multiple of micro_batch_size x dp = " + std::to_string(per_step));
    if (per_step > 0) out.workload.micro_batches = static_cast<int>(out.global_batch_size / per_step);
  }

  for (const unhonoured& u : not_honoured) {
    const json* v = given(tree, u.path);
    const bool noted = !v ? false
                       : u.when_false ? v->is_boolean() && !v->get<bool>()
                                      : !(v->is_boolean() && !v->get<bool>()) && !(v->is_number() && v->get<double>() <= u.quiet_up_to);
    if (noted) {
      notes.push_back(std::string(u.path) + " = " + shown(*v) + " is not honoured: " + std::string(u.why));
      out.not_modelled.push_back(notes.back());
    }
  }

  // Values Bridge overwrites: said when they differ from what the run will have.
  out.upstream = ov::read_as_upstream(s);
  const ov::resolved_settings r = ov::derive(out.upstream.as_run);
  for (const overwritten_value& o : overwritten)
    ov::reflect::for_each_field(r, [&](std::string_view name, const auto& final_value) {
      using T = std::remove_cvref_t<decltype(final_value)>;
      if (name != o.field) return;
      json now;
      if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int>) now = final_value;
      else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) now = final_value ? json(*final_value) : json();
      else return;
      if (now != o.value)
        notes.push_back(o.path + " = " + shown(o.value) + " has no effect: " + o.why + ", so the run has " +
                        o.field + " = " + shown(now));
    });
  for (const auto& [field, path] : out.path_of)
    if (find(tree, path)) out.in_document.insert(path);
  return out;
}

/// Whether the document holds upstream's default at the place settings field `field` was read
/// from (detail::upstream_defaults): then a rule upstream lets run is a note, not a warning.
inline bool holds_upstream_default(const document& doc, const bridge_config& c, std::string_view field) {
  const auto place = c.path_of.find(std::string(field));
  if (place == c.path_of.end()) return false;
  const json* v = detail::find(doc.tree, place->second);
  if (!v) return false;
  for (const detail::upstream_default& d : detail::upstream_defaults)
    if (d.path == place->second) return *v == json::parse(d.value);
  return false;
}

namespace detail {
inline void put(json& tree, std::string_view path, json value) {
  json* node = &tree;
  while (true) {
    const auto dot = path.find('.');
    const std::string key(path.substr(0, dot));
    if (dot == std::string_view::npos) {
      (*node)[key] = std::move(value);
      return;
    }
    node = &(*node)[key];
    path.remove_prefix(dot + 1);
  }
}
template <class E>
json enum_list(const ov::enum_set<E>& set) {
  json out = json::array();
  for (std::size_t i = 0; i < ov::enum_info<E>::count; ++i)
    if (set.contains(static_cast<E>(i))) out.push_back(std::string(ov::enum_info<E>::names[i]));
  return out;
}
inline json slot_tree(const ov::ub::slot& x) {
  json out = json::object();
  ov::reflect::for_each_field(x, [&](std::string_view name, const auto& v) {
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (std::is_enum_v<T>) out[std::string(name)] = std::string(ov::to_string(v));
    else out[std::string(name)] = v;
  });
  return out;
}
}  // namespace detail

/// `s` (and the workload, when given) as a Bridge config tree that read_config reads back to `s`:
/// each field at the place Bridge reads it from; `overlap_plan:` holds what Bridge has no field
/// for (the GPU, the TE version), `env_vars:` the environment.
inline json write_config(const ov::settings& s, const ov::schedule::workload* w = nullptr) {
  using namespace detail;
  json tree = json::object();
  tree["model"] = json::object();
  tree["comm_overlap"] = json::object();
  put(tree, "ddp.use_distributed_optimizer", s.distributed_optimizer);
  put(tree, "comm_overlap.data_parallel_size", s.data_parallel_size);
  ov::reflect::for_each_field(s, [&](std::string_view field, const auto& member) {
    using T = std::remove_cvref_t<decltype(member)>;
    if (field == "data_parallel_size" || field == "distributed_optimizer" || field == "gpu" || field == "te_version" ||
        field == "cuda_device_max_connections" || field == "layernorm_sm_margin")
      return;
    std::string path = places_of(field, tree).read.front();
    if constexpr (std::is_same_v<T, ov::dtype>) {  // precision
      put(tree, "model.bf16", member == ov::dtype::bf16);
      put(tree, "model.fp16", member == ov::dtype::fp16);
    } else if constexpr (std::is_same_v<T, bool>) {
      if (field == "use_dist_ckpt") put(tree, "checkpoint.ckpt_format", member ? "torch_dist" : "torch");
      else put(tree, path, member);
    } else if constexpr (is_optional<T>::value) {
      if (!member) return;
      using V = typename T::value_type;
      if constexpr (std::is_enum_v<V>) put(tree, path, std::string(ov::to_string(*member)));
      else if constexpr (std::is_same_v<V, ov::ub::user_config>) {
        if (!member->preset_name.empty()) {
          put(tree, path, std::string(member->preset_name));
          return;
        }
        json slots = json::object();
        for (const ov::ub::slot_id id : ov::ub::all_slots)
          if (member->slots[id]) slots[std::string(ov::ub::to_string(id))] = slot_tree(*member->slots[id]);
        put(tree, path, slots);
      } else if constexpr (!std::is_same_v<V, ov::version>) {  // te_version: under overlap_plan, below
        put(tree, path, *member);
      }
    } else if constexpr (std::is_enum_v<T>) {
      put(tree, path, std::string(ov::to_string(member)));
    } else if constexpr (is_enum_set<T>::value) {
      put(tree, path, enum_list(member));
    } else {
      put(tree, path, member);
    }
  });
  if (s.gpu) put(tree, "overlap_plan.gpu", std::string(ov::to_string(*s.gpu)));
  if (s.te_version)
    put(tree, "overlap_plan.te_version", std::to_string(s.te_version->major) + "." + std::to_string(s.te_version->minor) +
                                             "." + std::to_string(s.te_version->patch));
  if (s.cuda_device_max_connections) put(tree, "env_vars.CUDA_DEVICE_MAX_CONNECTIONS", *s.cuda_device_max_connections);
  if (s.layernorm_sm_margin) {
    put(tree, "env_vars.NVTE_FWD_LAYERNORM_SM_MARGIN", *s.layernorm_sm_margin);
    put(tree, "env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN", *s.layernorm_sm_margin);
  }
  if (w) {
    ov::reflect::for_each_field(*w, [&](std::string_view field, const auto& member) {
      using T = std::remove_cvref_t<decltype(member)>;
      if (field == "micro_batches") return;
      const std::string path = field == "micro_batch_size" ? "train.micro_batch_size" : "model." + std::string(detail::bridge_name(field));
      if constexpr (std::is_same_v<T, std::string>) put(tree, path, member.empty() ? json() : json(member));
      else if constexpr (std::is_same_v<T, int>) put(tree, path, member == 0 && field.find("pipeline_s") != std::string_view::npos ? json() : json(member));
      else put(tree, path, member);
    });
    put(tree, "train.global_batch_size", w->micro_batches * w->micro_batch_size * s.data_parallel_size);
  }
  return tree;
}

}  // namespace overlap_plan
