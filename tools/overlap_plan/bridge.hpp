#pragma once
// overlap-plan: a Megatron-Bridge config tree (tree.hpp) read into `overlap::settings` and a
// `schedule::workload`, and written back. The field names come from the reflected field lists
// (<overlap/settings/reflect.hpp>); what the reader adds is where Bridge keeps each field
// (places.hpp). Unknown fields are ignored; fields this tool knows but cannot honour become notes.
// Compiled once (read_config.cpp, write_config.cpp: the overlap_plan_reader library).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <overlap/rules/upstream.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/reflect_settings.hpp>
#include <overlap/settings/settings.hpp>

#include "tree.hpp"

BOOST_HANA_ADAPT_STRUCT(overlap::schedule::workload, num_layers, micro_batches, seq_length, micro_batch_size,
                        hidden_size, ffn_hidden_size, num_attention_heads, num_query_groups, kv_channels, vocab_size,
                        share_embeddings_and_output_weights, moe_router_topk, moe_ffn_hidden_size,
                        multi_latent_attention, q_lora_rank, kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim,
                        pipeline_layout, num_layers_in_first_pipeline_stage, num_layers_in_last_pipeline_stage,
                        account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split);

namespace overlap_plan {

namespace ov = overlap;

/// What the command line adds to a config.
struct read_options {
  std::optional<int> world_size{};          ///< --world-size: dp = world / (tp x pp x cp)
  std::optional<ov::gpu_model> gpu{};       ///< --gpu
  std::optional<ov::version> te_version{};  ///< --te-version
  bool process_environment = true;          ///< the launcher's environment wins over env_vars (PREC-9)
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
  ov::upstream_reading upstream;  ///< `settings` as upstream runs them (rules/upstream.hpp)
};

/// Reads `doc` (after overrides) into settings and a workload. Throws input_error (exit status 2)
/// on a value of the wrong type or outside what a field can hold.
bridge_config read_config(const document& doc, const read_options& opt = {});

/// Whether the document holds upstream's default at the place settings field `field` was read
/// from (detail::upstream_defaults): then a rule upstream lets run is a note, not a warning.
bool holds_upstream_default(const document& doc, const bridge_config& c, std::string_view field);

/// `s` (and the workload, when given) as a Bridge config tree that read_config reads back to `s`:
/// each field at the place Bridge reads it from; `overlap_plan:` holds what Bridge has no field
/// for (the GPU, the TE version), `env_vars:` the environment.
json write_config(const ov::settings& s, const ov::schedule::workload* w = nullptr);

}  // namespace overlap_plan
