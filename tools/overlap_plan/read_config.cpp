// The reading of a config (bridge.hpp): one member function of `config_reader` per concern, in
// the order Bridge applies them.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <overlap/config/ub_presets.hpp>
#include <overlap/rules/derive.hpp>

#include "bridge.hpp"
#include "places.hpp"

namespace overlap_plan {
namespace {

using namespace detail;

/// `pipeline_model_parallel_layout` as the layout string of schedule::parse_pipeline_layout.
/// Megatron-Core takes the string ("Et|(tt|)*30mL") or, as Bridge dumps its recipes, a list of
/// virtual stages, each a list of layer names (embedding, decoder, mtp, loss; case and spaces
/// ignored, as Core reads them): that list is written as the string, a stage's letters per stage.
std::string layout_text(const document& doc, const std::string& path, const json& v) {
  if (v.is_string()) return v.get<std::string>();
  const std::string expected =
      "expected the layout as a string (\"Et|(tt|)*30mL\") or a list of stages, each a list of "
      "layer names (embedding, decoder, mtp, loss)";
  if (!v.is_array() || v.empty()) bad(doc, path, expected + ", got " + shown(v));
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string stage = path + "[" + std::to_string(i) + "]";
    if (!v[i].is_array()) bad(doc, stage, expected + "; this stage is " + shown(v[i]));
    if (i > 0) out += '|';
    for (std::size_t j = 0; j < v[i].size(); ++j) {
      const std::string at = stage + "[" + std::to_string(j) + "]";
      if (!v[i][j].is_string())
        bad(doc, at, "expected a layer name (embedding, decoder, mtp, loss), got " + shown(v[i][j]));
      std::string name;
      for (const char c : v[i][j].get<std::string>())
        if (c != ' ' && c != '\t') name += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      if (name == "embedding")
        out += 'E';
      else if (name == "decoder")
        out += 't';
      else if (name == "mtp")
        out += 'm';
      else if (name == "loss")
        out += 'L';
      else if (name == "encoder")
        bad(doc, at, "encoder layers in a layout are not supported (Megatron-Core refuses them too)");
      else
        bad(doc, at, "unknown layer name " + shown(v[i][j]) + "; expected embedding, decoder, mtp or loss");
    }
  }
  return out;
}

/// `moe_layer_freq` as workload::moe_layer_pattern, as Megatron-Core reads it: an integer N makes
/// every N-th layer MoE (layer i when i % N == 0); a list gives each layer, 1 MoE and 0 dense, one
/// entry a layer. Every layer MoE is the empty pattern.
std::vector<int> moe_layers(const document& doc, const std::string& path, const json& v, int num_layers) {
  std::vector<int> out;
  if (v.is_number_integer() && !v.is_boolean()) {
    const std::int64_t n = v.get<std::int64_t>();
    if (n < 1) bad(doc, path, "expected an integer >= 1 or a list of 0 and 1, got " + shown(v));
    if (n == 1) return out;
    for (int i = 0; i < num_layers; ++i) out.push_back(i % n == 0 ? 1 : 0);
    return out;
  }
  if (!v.is_array())
    bad(doc, path,
        "expected an integer or a list of 0 (dense) and 1 (MoE), one a layer, got " + shown(v) +
            (v.is_string() ? " (write Python's expression as the list it makes)" : ""));
  if (static_cast<std::int64_t>(v.size()) != num_layers)
    bad(doc, path,
        "the list has " + std::to_string(v.size()) + " entries, model.num_layers is " + std::to_string(num_layers));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i].is_boolean() || !v[i].is_number_integer() ||
        (v[i].get<std::int64_t>() != 0 && v[i].get<std::int64_t>() != 1))
      bad(doc, path + "[" + std::to_string(i) + "]", "expected 0 (dense) or 1 (MoE), got " + shown(v[i]));
    out.push_back(static_cast<int>(v[i].get<std::int64_t>()));
  }
  if (std::all_of(out.begin(), out.end(), [](int x) { return x == 1; })) out.clear();
  return out;
}

/// The 19 upstream presets by name.
std::optional<ov::ub::user_config> preset(std::string_view name) {
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
ov::ub::slot to_slot(const document& doc, const std::string& path, const json& v, std::vector<std::string>& notes) {
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
      // Upstream's pipeline default fp8_buf=(False,) dumps as a list; read by its element, as the presets read it
      // (config/ub_presets.hpp).
      if (x->is_array() && x->size() == 1 && (*x)[0].is_boolean()) {
        notes.push_back(p + " = " + shown(*x) + " (a tuple, truthy in Python) is read as " +
                        ((*x)[0].get<bool>() ? "true" : "false") + ", as the presets read upstream's (False,) default");
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

ov::ub::user_config to_user_config(const document& doc, const std::string& path, const json& v,
                                   std::vector<std::string>& notes) {
  if (v.is_string()) {
    const std::string name = v.get<std::string>();
    if (auto p = preset(name)) return *p;
    if (name.ends_with(".yaml") || name.ends_with(".yml"))
      bad(doc, path,
          "a userbuffer YAML file (" + quote_text(name) +
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

/// A value at a place Bridge overwrites with the derived-or-user one (places::overwritten): kept to
/// compare with the resolved value at the end.
struct overwritten_value {
  std::string field, path, why;
  json value;
};

/// Reads one document: `read()` runs the steps below in order, each filling its part of `out`.
class config_reader {
 public:
  config_reader(const document& doc, const read_options& opt) : doc_(doc), tree_(doc.tree), opt_(opt) {}

  bridge_config read() && {
    check_sections();
    read_settings_fields();
    read_precision();
    read_distributed_optimizer();
    read_checkpoint_format();
    read_cuda_graph_modules();
    read_gpu_and_te_version();
    read_environment();
    read_workload();
    read_optimizer();
    read_data_parallel_size();
    read_micro_batches();
    note_not_honoured();
    note_overwritten();
    for (const auto& [field, path] : out_.path_of)
      if (find(tree_, path)) out_.in_document.insert(path);
    return std::move(out_);
  }

 private:
  /// The top-level sections are mappings (mixed_precision may be a recipe's name).
  void check_sections() {
    for (const char* name : {"model", "comm_overlap", "ddp", "optimizer", "mixed_precision", "train", "dataset",
                             "checkpoint", "env_vars", "overlap_plan"}) {
      const json* v = find(tree_, name);
      if (v && !v->is_null() && !v->is_object() && !(std::string_view(name) == "mixed_precision" && v->is_string()))
        bad(doc_, name, "expected a section (a mapping), got " + shown(*v));
    }
    if (!section(tree_, "model")) notes_.push_back("no model section: every model field takes upstream's default");
  }

  /// Reads the first place of `p` that holds a value; notes later places that disagree, and keeps
  /// the overwritten ones to compare with the resolved value at the end.
  std::optional<std::pair<std::string, json>> pick(std::string_view field, const places& p) {
    std::optional<std::pair<std::string, json>> winner;
    for (const std::string& path : p.read) {
      const json* v = given(tree_, path);
      if (!v) continue;
      if (!winner) {
        winner.emplace(path, *v);
        continue;
      }
      if (*v != winner->second)
        notes_.push_back(path + " = " + shown(*v) + " disagrees with " + winner->first + " = " + shown(winner->second) +
                         "; " + (p.why.empty() ? "the first one wins" : p.why) + ", so " + std::string(field) +
                         " is read from " + winner->first);
    }
    for (const std::string& path : p.overwritten)
      if (const json* v = given(tree_, path)) overwritten_.push_back({std::string(field), path, p.why, *v});
    return winner;
  }

  /// Every settings field read as its type says, at its places (places_of); the fields with a
  /// reading of their own (below) only get their path here.
  void read_settings_fields() {
    ov::reflect::for_each_field(s_, [&](std::string_view field, auto& member) {
      using T = std::remove_cvref_t<decltype(member)>;
      const places p = places_of(field, tree_);
      out_.path_of[std::string(field)] = p.read.front();
      if (field == "data_parallel_size" || field == "distributed_optimizer" || field == "precision" || field == "fp8" ||
          field == "fp4" || field == "use_dist_ckpt" || field == "gpu" || field == "te_version" ||
          field == "cuda_device_max_connections" || field == "layernorm_sm_margin" || field == "cuda_graph_modules")
        return;
      const auto got = pick(field, p);
      if (!got) return;
      const auto& [path, v] = *got;
      out_.path_of[std::string(field)] = path;
      if (path.starts_with("comm_overlap.") && in(field, ddp_owned) && !ddp_distributed_optimizer(tree_))
        notes_.push_back(path +
                         " is ignored by Bridge without ddp.use_distributed_optimizer (PREC-5); it is checked "
                         "here as requested, so the rules name what it needs");
      using V = typename std::conditional_t<is_optional<T>::value, T, std::optional<T>>::value_type;
      V value{};
      if constexpr (std::is_same_v<V, bool>) {
        value = to_bool(doc_, path, v);
      } else if constexpr (std::is_same_v<V, int> || std::is_same_v<V, std::int64_t>) {
        value = to_integer<V>(doc_, path, v);
        if (field.ends_with("_parallel_size") && value < 1)
          bad(doc_, path, "a parallel size must be at least 1, got " + shown(v));
      } else if constexpr (std::is_enum_v<V>) {
        value = to_enum<V>(doc_, path, v);
      } else if constexpr (is_enum_set<V>::value) {
        value = to_enum_set<typename is_enum_set<V>::element>(doc_, path, v);
      } else if constexpr (std::is_same_v<V, ov::ub::user_config>) {
        value = to_user_config(doc_, path, v, notes_);
      }
      member = value;
    });
  }

  /// A boolean at `path`, where the tree holds one.
  std::optional<bool> flag(const std::string& path) const {
    const json* v = given(tree_, path);
    if (!v) return std::nullopt;
    return to_bool(doc_, path, *v);
  }

  /// Precision: mixed_precision (a recipe name or a config) applied over the model's flags; then
  /// the fp8 / fp4 formats.
  void read_precision() {
    std::optional<bool> bf16, fp16;
    std::string from;
    if (const json* mp = given(tree_, "mixed_precision"); mp && mp->is_string()) {
      const std::string recipe = mp->get<std::string>();
      from = "mixed_precision";
      if (recipe.starts_with("bf16"))
        bf16 = true;
      else if (recipe.starts_with("fp16"))
        fp16 = true;
      else
        notes_.push_back("mixed_precision recipe " + quote_text(recipe) +
                         " is not known here; precision read from the model");
      if (recipe.find("fp8") != std::string::npos) {
        s_.fp8 = true;
        out_.path_of["fp8"] = "mixed_precision";
      }
      if (recipe.find("fp4") != std::string::npos) {
        s_.fp4 = true;
        out_.path_of["fp4"] = "mixed_precision";
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
    } else if ((model_bf16 && model_bf16 != bf16.value_or(false)) ||
               (model_fp16 && model_fp16 != fp16.value_or(false))) {
      notes_.push_back(
          "model.bf16/fp16 disagree with mixed_precision; Bridge applies mixed_precision over the model, "
          "so precision is read from mixed_precision");
    }
    if (bf16.value_or(false) && fp16.value_or(false))
      bad(doc_, from + ".bf16", "bf16 and fp16 are both true; choose one");
    s_.precision = bf16.value_or(false) ? ov::dtype::bf16 : fp16.value_or(false) ? ov::dtype::fp16 : ov::dtype::fp32;
    out_.path_of["precision"] = from + (s_.precision == ov::dtype::fp16 ? ".fp16" : ".bf16");
    read_format("fp8", s_.fp8, "\"hybrid\", \"e4m3\"");
    read_format("fp4", s_.fp4, "\"e2m1\"");
    // How fp8 parameters are kept (schedule/parameter_storage.hpp).
    out_.workload.fp8_recipe_mxfp8 = fp8_recipe_of("model") == "mxfp8";
  }

  /// fp8 / fp4: a format string ("hybrid", "e4m3"; "e2m1") or a flag, mixed_precision over the
  /// model; unless the mixed_precision recipe's name already turned it on.
  void read_format(const char* field, bool& member, const char* example) {
    if (member) return;
    const auto got = pick(field, places_of(field, tree_));
    if (!got) return;
    const auto& [path, v] = *got;
    out_.path_of[field] = path;
    if (v.is_boolean())
      member = v.get<bool>();
    else if (v.is_string())
      member = !v.get<std::string>().empty();
    else
      bad(doc_, path, std::string("expected an ") + field + " format (" + example + ") or null, got " + shown(v));
  }

  /// The distributed optimizer: Bridge derives DP overlap from ddp's flag alone (PREC-5), then
  /// turns both on when either is (DP-6).
  void read_distributed_optimizer() {
    const json* d = given(tree_, "ddp.use_distributed_optimizer");
    const json* o = given(tree_, "optimizer.use_distributed_optimizer");
    const bool on_ddp = d && to_bool(doc_, "ddp.use_distributed_optimizer", *d);
    const bool on_optimizer = o && to_bool(doc_, "optimizer.use_distributed_optimizer", *o);
    s_.distributed_optimizer = on_ddp || on_optimizer;
    out_.path_of["distributed_optimizer"] =
        d || !o ? "ddp.use_distributed_optimizer" : "optimizer.use_distributed_optimizer";
    if (d && o && on_ddp != on_optimizer)
      notes_.push_back(
          std::string("ddp.use_distributed_optimizer = ") + (on_ddp ? "true" : "false") +
          " disagrees with optimizer.use_distributed_optimizer = " + (on_optimizer ? "true" : "false") +
          "; Bridge turns both on (DP-6)" +
          (on_ddp ? ""
                  : ", but derives DP overlap from ddp's false (PREC-5), so the DP overlap fields keep ddp's values"));
    if (on_optimizer && !on_ddp) {
      // PREC-5: no DP derivation; ddp's own values (Core default false) stand.
      for (auto* f : {&s_.overlap_grad_reduce, &s_.overlap_param_gather})
        if (!*f) *f = false;
    }
  }

  /// Checkpoint format: anything but plain torch is a distributed checkpoint (DP-10).
  void read_checkpoint_format() {
    if (const json* v = given(tree_, "checkpoint.ckpt_format")) {
      if (!v->is_string()) bad(doc_, "checkpoint.ckpt_format", "expected a format name, got " + shown(*v));
      s_.use_dist_ckpt = v->get<std::string>() != "torch";
    }
    out_.path_of["use_dist_ckpt"] = "checkpoint.ckpt_format";
  }

  /// CUDA graph modules: cuda_graph_modules and the deprecated cuda_graph_scope together (CG-1);
  /// the deprecated moe_layer_recompute adds moe to the recomputed modules, as Core does.
  void read_cuda_graph_modules() {
    for (const char* path : {"model.cuda_graph_modules", "model.cuda_graph_scope"})
      if (const json* v = given(tree_, path)) {
        s_.cuda_graph_modules.bits |= to_enum_set<ov::graph_module>(doc_, path, *v).bits;
        out_.path_of["cuda_graph_modules"] = path;
      }
    if (!out_.path_of.count("cuda_graph_modules")) out_.path_of["cuda_graph_modules"] = "model.cuda_graph_modules";
    if (const json* v = given(tree_, "model.moe_layer_recompute");
        v && to_bool(doc_, "model.moe_layer_recompute", *v)) {
      s_.recompute_modules.insert(ov::module::moe);
      notes_.push_back("model.moe_layer_recompute (deprecated) adds moe to recompute_modules, as Core does");
    }
  }

  /// This tool's own section and the command line: the GPU and the Transformer Engine version.
  void read_gpu_and_te_version() {
    if (const json* v = given(tree_, "overlap_plan.gpu")) s_.gpu = to_enum<ov::gpu_model>(doc_, "overlap_plan.gpu", *v);
    if (const json* v = given(tree_, "overlap_plan.te_version"))
      s_.te_version = to_version(doc_, "overlap_plan.te_version", *v);
    if (opt_.gpu) s_.gpu = opt_.gpu;
    if (opt_.te_version) s_.te_version = opt_.te_version;
    out_.path_of["gpu"] = "--gpu";
    out_.path_of["te_version"] = "--te-version";
  }

  /// The environment: env_vars (a recipe's), then the launcher's environment, which wins (PREC-9).
  void read_environment() {
    read_variable("CUDA_DEVICE_MAX_CONNECTIONS", s_.cuda_device_max_connections, "cuda_device_max_connections");
    read_variable("NVTE_FWD_LAYERNORM_SM_MARGIN", s_.layernorm_sm_margin, "layernorm_sm_margin");
    if (const json* v = given(tree_, "env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN")) {
      json x = *v;
      if (x.is_string()) x = detail::plain_scalar(x.get<std::string>());
      const std::optional<int> bwd = to_integer<int>(doc_, "env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN", x);
      if (bwd != s_.layernorm_sm_margin)
        notes_.push_back(
            "env_vars.NVTE_BWD_LAYERNORM_SM_MARGIN differs from NVTE_FWD_LAYERNORM_SM_MARGIN; one margin "
            "(layernorm_sm_margin) is modelled, read from the forward one");
    }
  }

  /// One variable of the environment into settings field `settings_field`.
  void read_variable(const char* name, std::optional<int>& field, const char* settings_field) {
    const std::string path = std::string("env_vars.") + name;
    out_.path_of[settings_field] = path;
    if (const json* v = given(tree_, path)) {
      json x = *v;
      if (x.is_string()) {
        const json parsed = detail::plain_scalar(x.get<std::string>());
        if (parsed.is_number_integer()) x = parsed;
      }
      field = to_integer<int>(doc_, path, x);
    }
    if (!opt_.process_environment) return;
    if (const char* e = std::getenv(name)) {
      const json parsed = detail::plain_scalar(e);
      if (!parsed.is_number_integer() || parsed.get<std::int64_t>() < std::numeric_limits<int>::min() ||
          parsed.get<std::int64_t>() > std::numeric_limits<int>::max())
        throw input_error(std::string("environment: ") + name + "=" + quote_text(e) + " is not an integer");
      field = static_cast<int>(parsed.get<std::int64_t>());
      out_.path_of[settings_field] = std::string("environment ") + name;
      notes_.push_back(std::string(name) + "=" + e +
                       " is taken from the environment, which wins over env_vars (PREC-9)");
    }
  }

  /// Whether a workload field may be absent: MLA's sizes (a dump of a model without MLA may lack
  /// them; q_lora_rank null: none), GQA's and MoE's, the pipeline's split.
  static bool optional_workload_field(std::string_view field) {
    const bool mla = field == "multi_latent_attention" || field.find("lora_rank") != std::string_view::npos ||
                     field.find("head_dim") != std::string_view::npos;
    return field == "num_query_groups" || field == "kv_channels" || mla ||
           field == "share_embeddings_and_output_weights" || field == "moe_router_topk" ||
           field == "moe_ffn_hidden_size" || field == "pipeline_layout" ||
           field.find("pipeline_s") != std::string_view::npos;
  }

  /// Where a micro-batch's sequence length is kept, in the order Bridge trains on them: its data
  /// loader yields the dataset's sequences, packed to packed_sequence_size where the dataset
  /// packs them (SFT; a size of 0 or less packs nothing); model.seq_length only bounds the
  /// positions (Bridge asserts it equals the dataset's for its pretraining datasets).
  std::vector<std::string> sequence_places() const {
    std::vector<std::string> out;
    constexpr const char* packed = "dataset.packed_sequence_specs.packed_sequence_size";
    if (const json* v = given(tree_, packed); v && !(v->is_number() && v->get<double>() <= 0)) out.push_back(packed);
    out.insert(out.end(), std::begin(dataset_sequence), std::end(dataset_sequence));
    out.push_back("model.seq_length");
    return out;
  }
  /// Where a dataset config keeps its sequence length (GPTDatasetConfig's sequence_length is an
  /// alias of seq_length).
  static constexpr const char* dataset_sequence[] = {"dataset.seq_length", "dataset.sequence_length"};
  /// Bridge's own dataset configs, for which ConfigContainer.validate asserts that
  /// model.seq_length equals the dataset's.
  static constexpr std::string_view validated_datasets[] = {"GPTDatasetConfig", "GPTSFTDatasetConfig",
                                                            "DirectHFSFTDatasetConfig", "EnergonDatasetConfig",
                                                            "MockVLMSFTDatasetConfig"};
  void check_sequence_lengths() {
    const json* target = given(tree_, "dataset._target_");
    const json* model = given(tree_, "model.seq_length");
    if (!target || !target->is_string() || !model) return;
    const std::string name = target->get<std::string>();
    const std::string dataset = name.substr(name.rfind('.') + 1);
    if (!in(dataset, validated_datasets)) return;
    for (const char* p : dataset_sequence)
      if (const json* v = given(tree_, p); v && *v != *model)
        bad(doc_, "model.seq_length",
            "model.seq_length = " + shown(*model) + " disagrees with " + p + " = " + shown(*v) +
                ", which Bridge refuses for a " + dataset + " (ConfigContainer.validate asserts they match): set both");
  }
  static constexpr const char* trained_sequence =
      "Bridge trains on the dataset's sequences (packed to packed_sequence_size where it packs), "
      "model.seq_length only bounds the positions";

  /// Workload: the model's sizes (Megatron's names) and the batch.
  void read_workload() {
    ov::schedule::workload& w = out_.workload;
    ov::reflect::for_each_field(w, [&](std::string_view field, auto& member) {
      using T = std::remove_cvref_t<decltype(member)>;
      if (field == "micro_batches") return;
      std::vector<std::string> paths{"model." + std::string(detail::bridge_name(field))};
      if (field == "micro_batch_size") paths = {"train.micro_batch_size"};
      if (field == "seq_length") paths = sequence_places();
      if (field == "vocab_size") paths.insert(paths.begin(), "model.padded_vocab_size");
      const auto got = pick(field, places{paths, {}, field == "seq_length" ? trained_sequence : ""});
      if (!got) {
        if (!optional_workload_field(field))
          out_.missing_workload.push_back(field == "seq_length" ? paths.back() : paths.front());
        return;
      }
      const auto& [path, v] = *got;
      if constexpr (std::is_same_v<T, bool>) {
        member = to_bool(doc_, path, v);
      } else if constexpr (std::is_same_v<T, std::string>) {
        member = layout_text(doc_, path, v);
      } else {
        member = to_integer<int>(doc_, path, v);
        if (member < 0) bad(doc_, path, "a model size cannot be negative, got " + shown(v));
      }
    });
    check_sequence_lengths();
    if (!s_.num_moe_experts) {
      w.moe_router_topk = 0;
      w.moe_ffn_hidden_size = 0;
    } else if (const json* v = given(tree_, "model.moe_layer_freq")) {
      w.moe_layer_pattern = moe_layers(doc_, "model.moe_layer_freq", *v, w.num_layers);
    }
    if (const json* v = given(tree_, "train.global_batch_size"))
      out_.global_batch_size = to_integer<int>(doc_, "train.global_batch_size", *v);
    else
      out_.missing_workload.push_back("train.global_batch_size");
    if (out_.global_batch_size < 0) bad(doc_, "train.global_batch_size", "cannot be negative");
  }

  /// The optimizer's precision fields (workload.optimizer, optimizer_state.hpp), refused where
  /// Megatron-Core's OptimizerConfig refuses them, and the fp8 recipe it is told of.
  void read_optimizer() {
    ov::schedule::optimizer_precision& o = out_.workload.optimizer;
    const auto flag_at = [&](const char* path, bool& member) {
      if (const json* v = given(tree_, path)) member = to_bool(doc_, path, *v);
    };
    flag_at("optimizer.use_precision_aware_optimizer", o.use_precision_aware_optimizer);
    flag_at("optimizer.store_param_remainders", o.store_param_remainders);
    const std::pair<const char*, int*> dtypes[] = {{"main_params_dtype", &o.main_params_bytes},
                                                   {"exp_avg_dtype", &o.exp_avg_bytes},
                                                   {"exp_avg_sq_dtype", &o.exp_avg_sq_bytes},
                                                   {"main_grads_dtype", nullptr}};
    for (const auto& [field, member] : dtypes) {
      const std::string path = std::string("optimizer.") + field;
      const json* v = given(tree_, path);
      if (!v) continue;
      const int bytes = to_dtype_bytes(doc_, path, *v);
      if (member) *member = bytes;
      if (!o.use_precision_aware_optimizer && bytes != 4)
        bad(doc_, path,
            std::string(field) +
                " can only be fp32 without optimizer.use_precision_aware_optimizer (Megatron-Core's "
                "OptimizerConfig asserts it)");
    }
    if (const json* v = given(tree_, "optimizer.optimizer"); v && *v != "adam") {
      if (o.use_precision_aware_optimizer)
        bad(doc_, "optimizer.optimizer",
            "use_precision_aware_optimizer is only supported with adam (Megatron-Core's OptimizerConfig asserts "
            "it), got " +
                shown(*v));
      notes_.push_back("optimizer.optimizer = " + shown(*v) + " is not modelled: only Adam's state and step are");
      out_.not_modelled.push_back(notes_.back());
    }
    o.fp8_recipe_with_own_scales = optimizer_recipe_has_own_scales();
  }

  /// The fp8 recipe `section` ("model" or "optimizer") is told of (empty: none): mixed_precision's,
  /// which Bridge copies over both whether or not fp8 is on: a mapping's fp8_recipe
  /// (MixedPrecisionConfig's default "tensorwise" where it has none), a recipe name's ("delayed"
  /// and "mxfp8" in the names of those recipes, "blockwise" in the subchannel ones', else
  /// "tensorwise"); without mixed_precision, the section's own fp8_recipe.
  std::string fp8_recipe_of(const std::string& section) {
    const json* mp = given(tree_, "mixed_precision");
    if (mp && mp->is_string()) {
      const std::string name = mp->get<std::string>();
      for (const char* recipe : {"delayed", "mxfp8"})
        if (name.find(recipe) != std::string::npos) return recipe;
      return name.find("subchannel") != std::string::npos ? "blockwise" : "tensorwise";
    }
    if (mp && mp->is_object()) {
      if (!mp->contains("fp8_recipe")) return "tensorwise";  // MixedPrecisionConfig's default
      return given(*mp, "fp8_recipe") ? text_at("mixed_precision.fp8_recipe") : "";
    }
    return !mp && given(tree_, section + ".fp8_recipe") ? text_at(section + ".fp8_recipe") : "";
  }
  /// Whether the fp8 recipe the optimizer is told of scales outside its kernel (not none, not
  /// delayed).
  bool optimizer_recipe_has_own_scales() {
    const std::string recipe = fp8_recipe_of("optimizer");
    return !recipe.empty() && recipe != "delayed";
  }

  /// The string at `path`, refused when it is something else.
  std::string text_at(const std::string& path) {
    const json& v = *given(tree_, path);
    if (!v.is_string()) bad(doc_, path, "expected a name, got " + shown(v));
    return v.get<std::string>();
  }

  /// Data-parallel size: Bridge derives it from the world size (DP-4).
  void read_data_parallel_size() {
    const long model_ranks =
        long{s_.tensor_model_parallel_size} * s_.pipeline_model_parallel_size * s_.context_parallel_size;
    out_.path_of["data_parallel_size"] = "comm_overlap.data_parallel_size";
    std::optional<int> given_dp;
    if (const json* v = given(tree_, "comm_overlap.data_parallel_size")) {
      given_dp = to_integer<int>(doc_, "comm_overlap.data_parallel_size", *v);
      if (*given_dp < 1)
        bad(doc_, "comm_overlap.data_parallel_size", "a parallel size must be at least 1, got " + shown(*v));
    }
    if (opt_.world_size) {
      if (*opt_.world_size < 1 || *opt_.world_size % model_ranks != 0)
        throw input_error("--world-size " + std::to_string(*opt_.world_size) +
                          " is not a multiple of tp x pp x cp = " + std::to_string(model_ranks) +
                          " (Bridge: world size not divisible by total model size, DP-4)");
      s_.data_parallel_size = static_cast<int>(*opt_.world_size / model_ranks);
      out_.path_of["data_parallel_size"] = "--world-size";
      notes_.push_back("data_parallel_size = " + std::to_string(s_.data_parallel_size) + " = world size " +
                       std::to_string(*opt_.world_size) + " / (tp x pp x cp = " + std::to_string(model_ranks) +
                       "), as Bridge derives it (DP-4)");
      if (given_dp && *given_dp != s_.data_parallel_size)
        notes_.push_back("comm_overlap.data_parallel_size = " + std::to_string(*given_dp) +
                         " is replaced by the one --world-size gives, as Bridge does");
    } else if (given_dp) {
      s_.data_parallel_size = *given_dp;
    } else if (opt_.require_world_size) {
      throw input_error("world size needed: give --world-size N (the job's GPUs; dp = N / (tp x pp x cp = " +
                        std::to_string(model_ranks) + "), as Bridge derives it) or comm_overlap.data_parallel_size");
    } else {
      notes_.push_back(
          "data_parallel_size = 1: give --world-size N (dp = N / (tp x pp x cp), as Bridge derives it) or "
          "comm_overlap.data_parallel_size");
    }
  }

  /// Micro-batches per data-parallel rank: the global batch over micro_batch_size x dp.
  void read_micro_batches() {
    if (out_.global_batch_size <= 0) return;
    const long per_step = long{out_.workload.micro_batch_size} * s_.data_parallel_size;
    if (per_step > 0 && out_.global_batch_size % per_step != 0)
      bad(doc_, "train.global_batch_size",
          "global_batch_size " + std::to_string(out_.global_batch_size) +
              " is not a multiple of micro_batch_size x dp = " + std::to_string(per_step));
    if (per_step > 0) out_.workload.micro_batches = static_cast<int>(out_.global_batch_size / per_step);
  }

  /// The fields that shape the run but are not modelled (not_honoured): a note, when set.
  void note_not_honoured() {
    for (const unhonoured& u : not_honoured) {
      const json* v = given(tree_, u.path);
      const bool noted = !v             ? false
                         : u.when_false ? v->is_boolean() && !v->get<bool>()
                                        : !(v->is_boolean() && !v->get<bool>()) &&
                                              !(v->is_number() && v->get<double>() <= u.quiet_up_to);
      if (noted) {
        notes_.push_back(std::string(u.path) + " = " + shown(*v) + " is not honoured: " + std::string(u.why));
        out_.not_modelled.push_back(notes_.back());
      }
    }
  }

  /// Values Bridge overwrites: said when they differ from what the run will have. Sets
  /// `out_.upstream`, the settings as upstream runs them.
  void note_overwritten() {
    out_.upstream = ov::read_as_upstream(s_);
    const ov::resolved_settings r = ov::derive(out_.upstream.as_run);
    for (const overwritten_value& o : overwritten_)
      ov::reflect::for_each_field(r, [&](std::string_view name, const auto& final_value) {
        using T = std::remove_cvref_t<decltype(final_value)>;
        if (name != o.field) return;
        json now;
        if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int>)
          now = final_value;
        else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>)
          now = final_value ? json(*final_value) : json();
        else
          return;
        if (now != o.value)
          notes_.push_back(o.path + " = " + shown(o.value) + " has no effect: " + o.why + ", so the run has " +
                           o.field + " = " + shown(now));
      });
  }

  const document& doc_;
  const json& tree_;
  const read_options& opt_;
  bridge_config out_;                ///< what is read so far
  ov::settings& s_ = out_.settings;  ///< its settings
  std::vector<std::string>& notes_ = out_.notes;
  std::vector<overwritten_value> overwritten_;  ///< what `pick` saw at places Bridge overwrites
};

}  // namespace

bridge_config read_config(const document& doc, const read_options& opt) { return config_reader(doc, opt).read(); }

bool holds_upstream_default(const document& doc, const bridge_config& c, std::string_view field) {
  const auto place = c.path_of.find(std::string(field));
  if (place == c.path_of.end()) return false;
  const json* v = detail::find(doc.tree, place->second);
  if (!v) return false;
  for (const detail::upstream_default& d : detail::upstream_defaults)
    if (d.path == place->second) return *v == json::parse(d.value);
  return false;
}

}  // namespace overlap_plan
