// The overlap-plan reader: settings -> Bridge YAML -> settings is the identity over the
// check/validate sweep, with the same rule ids; the valid examples' Bridge configs resolve as
// their config types do; bad input gets one message naming the place and the field.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <string>

#include <overlap/overlap.hpp>
#include <overlap/rules/validate.hpp>

#include "../sweep.hpp"
#include "bridge.hpp"
#include "overrides.hpp"

namespace ov = overlap;
namespace op = overlap_plan;

namespace sweep {
ov::settings settings_of(std::size_t i);
}

namespace {

op::bridge_config read_text(const std::string& yaml, const op::read_options& opt = {.process_environment = false}) {
  return op::read_config(op::parse_text(yaml, "test.yaml", false), opt);
}

/// The input_error's message that reading `yaml` gives, or "(no error)".
std::string message(const std::string& yaml) {
  try {
    read_text(yaml);
  } catch (const op::input_error& e) {
    return std::string(e.what());
  }
  return std::string("(no error)");
}

bool has_note(const op::bridge_config& c, const std::string& text) {
  for (const std::string& n : c.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

std::string ids(const ov::report& r) {
  std::string out;
  for (const auto& d : r) (out += d.id) += ' ';
  return out;
}

op::bridge_config read_example(const char* name) {
  return op::read_config(op::read_file(std::string(OVERLAP_SOURCE_DIR) + "/tests/plan/examples/" + name),
                         {.process_environment = false});
}

}  // namespace

TEST_CASE("settings -> Bridge YAML -> settings is the identity over the sweep, with the same rule ids") {
  int valid = 0;
  for (std::size_t i = 0; i < 2000; ++i) {
    const ov::settings s = sweep::settings_of(i);
    const std::string yaml = op::to_yaml(op::write_config(s));
    const op::bridge_config back = read_text(yaml);
    INFO("configuration " << i << "\n" << yaml);
    REQUIRE(back.settings == s);
    const ov::report a = ov::validate(s), b = ov::validate(back.settings);
    CHECK(ids(a) == ids(b));
    valid += a.ok();
  }
  CHECK(valid > 100);  // the sweep reaches valid configurations as well as invalid ones
}

TEST_CASE("the same round trip through JSON") {
  for (std::size_t i = 0; i < 300; ++i) {
    const ov::settings s = sweep::settings_of(i);
    const op::bridge_config back =
        op::read_config(op::parse_text(op::write_config(s).dump(), "test.json", true), {.process_environment = false});
    REQUIRE(back.settings == s);
  }
}

TEST_CASE("the valid examples' Bridge configs resolve as their config types") {
  using quick_start =
      ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<8>, ov::ep<16>, ov::etp<1>,
                 ov::distributed_optimizer<>, ov::num_moe_experts<128>,
                 ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                 ov::tp_comm_overlap<>, ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>>;
  using llama_70b = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
                               ov::tp_comm_overlap_cfg<ov::ub::userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192>,
                               ov::pp<4>, ov::vpp<5>, ov::dp<4>, ov::distributed_optimizer<>,
                               ov::precision<ov::dtype::bf16>, ov::gpu<ov::gpu_model::h100>>;
  using qwen3 = ov::config<ov::tp<1>, ov::pp<1>, ov::dp<16>, ov::ep<16>, ov::num_moe_experts<128>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                           ov::distributed_optimizer<>, ov::overlap_moe_expert_parallel_comm<>,
                           ov::delay_wgrad_compute<>, ov::te_version<2, 8, 0>, ov::gpu<ov::gpu_model::h100>>;
  const auto same = [](const op::bridge_config& c, const ov::resolved_settings& r) {
    const ov::report rep = ov::validate(c.settings);
    REQUIRE(rep.ok());
    CHECK(*rep.resolved == r);
  };
  same(read_example("quick_start.yaml"), quick_start::resolved);
  same(read_example("dense_tp_pp_dp.yaml"), llama_70b::resolved);
  same(read_example("moe_qwen3_30b_a3b.yaml"), qwen3::resolved);
  CHECK(read_example("dense_tp_pp_dp.yaml").workload.micro_batches == 4);  // 16 / (1 x dp 4)
}

TEST_CASE("where Bridge keeps one value twice, upstream's precedence decides and a note says so") {
  SUBCASE("comm_overlap overwrites the model's copy (PREC-4)") {
    const op::bridge_config c = read_text(
        "model: {overlap_moe_expert_parallel_comm: true, delay_wgrad_compute: true}\n"
        "comm_overlap: {delay_wgrad_compute: false}\n");
    CHECK(c.settings.delay_wgrad_compute == false);
    CHECK(!c.settings.overlap_moe_expert_parallel_comm);
    CHECK(c.path_of.at("delay_wgrad_compute") == "comm_overlap.delay_wgrad_compute");
    std::string notes;
    for (const auto& n : c.notes) notes += n + "\n";
    CHECK(notes.find("model.overlap_moe_expert_parallel_comm = true has no effect") != std::string::npos);
    CHECK(notes.find("model.delay_wgrad_compute = true has no effect") != std::string::npos);
  }
  SUBCASE("without comm_overlap the model's value stands") {
    const op::bridge_config c = read_text("model: {delay_wgrad_compute: true}\n");
    CHECK(c.settings.delay_wgrad_compute == true);
  }
  SUBCASE("ddp and optimizer disagree on the distributed optimizer (DP-6)") {
    const op::bridge_config c =
        read_text("ddp: {use_distributed_optimizer: false}\noptimizer: {use_distributed_optimizer: true}\n");
    CHECK(c.settings.distributed_optimizer);
    CHECK(has_note(c, "Bridge turns both on (DP-6)"));
  }
  SUBCASE("mixed_precision over the model") {
    const op::bridge_config c = read_text("model: {bf16: false, fp16: true}\nmixed_precision: {bf16: true}\n");
    CHECK(c.settings.precision == ov::dtype::bf16);
    CHECK(has_note(c, "Bridge applies mixed_precision over the model"));
  }
  SUBCASE("dp from the world size (DP-4)") {
    const op::bridge_config c = read_text("model: {tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2}\n",
                                          {.world_size = 32, .process_environment = false});
    CHECK(c.settings.data_parallel_size == 8);
    CHECK_THROWS_AS(
        read_text("model: {tensor_model_parallel_size: 3}\n", {.world_size = 32, .process_environment = false}),
        op::input_error);
  }
}

TEST_CASE("unknown fields are ignored, Hydra _call_ objects skipped or named, unmodelled fields noted") {
  const op::bridge_config c = read_text(
      "_target_: megatron.bridge.training.config.ConfigContainer\n"
      "model:\n  _target_: x.Provider\n  params_dtype: {_call_: false, _target_: torch.bfloat16}\n"
      "  rotary_base: 500000\n  tensor_model_parallel_size: 2\n"
      "ddp: {use_megatron_fsdp: true}\nlogger: {log_interval: 10}\n");
  CHECK(c.settings.tensor_model_parallel_size == 2);
  bool fsdp = false;
  for (const auto& n : c.notes)
    fsdp = fsdp || n.find("ddp.use_megatron_fsdp = true is not honoured") != std::string::npos;
  CHECK(fsdp);
}

TEST_CASE("bad input: one message with the place and the field") {
  CHECK(message("model:\n  tensor_model_parallel_size: \"four\"\n") ==
        "test.yaml:2:31: model.tensor_model_parallel_size: expected an integer, got \"four\"");
  CHECK(message("model:\n  moe_token_dispatcher_type: alltoal\n") ==
        "test.yaml:2:30: model.moe_token_dispatcher_type: unknown value \"alltoal\"; expected one of allgather, "
        "alltoall, flex");
  const std::string negative = message("model: {pipeline_model_parallel_size: -2}\n");
  CHECK(negative.starts_with("test.yaml:1:"));
  CHECK(negative.find(": model.pipeline_model_parallel_size: a parallel size must be at least 1, got -2") !=
        std::string::npos);
  CHECK(message("model: [1, 2]\n") == "test.yaml:1:8: model: expected a section (a mapping), got a list");
  CHECK(message("model:\n  a: [1\n").find("test.yaml:") == 0);
  CHECK(message("").find("the file is empty") != std::string::npos);
  CHECK(message("- 1\n- 2\n").find("not a mapping of sections") != std::string::npos);
  CHECK(message("model: {tensor_model_parallel_size: 99999999999999999999}\n").find("expected an integer") !=
        std::string::npos);
  CHECK(message("a: &x [*x, *x]\n").find("test.yaml") == 0);
  CHECK(message("model: {recompute_modules: [core_attn, mo]}\n")
            .find("model.recompute_modules[1]: unknown value \"mo\"") != std::string::npos);
  CHECK(message("comm_overlap: {tp_comm_overlap_cfg: nope}\n").find("unknown userbuffer preset") != std::string::npos);
}

TEST_CASE("Hydra overrides apply on top, with their own place in messages") {
  op::document doc = op::parse_text("model: {tensor_model_parallel_size: 2}\n", "test.yaml", false);
  op::apply_override(doc, "model.tensor_model_parallel_size=4");
  op::apply_override(doc, "+comm_overlap.tp_comm_overlap=true");
  op::apply_override(doc, "++model.recompute_modules=[core_attn,mlp]");
  op::bridge_config c = op::read_config(doc, {.process_environment = false});
  CHECK(c.settings.tensor_model_parallel_size == 4);
  CHECK(c.settings.tp_comm_overlap == true);
  CHECK(c.settings.recompute_modules.contains(ov::module::mlp));
  op::apply_override(doc, "++model.sequence_parallel=yes");
  try {
    op::read_config(doc, {.process_environment = false});
    FAIL("no error");
  } catch (const op::input_error& e) {
    CHECK(std::string(e.what()) ==
          "override '++model.sequence_parallel=yes': model.sequence_parallel: expected true or false, got \"yes\"");
  }
  CHECK_THROWS_AS(op::apply_override(doc, "model.tensor_model_parallel_size.x=1"), op::input_error);
  op::apply_override(doc, "~model.sequence_parallel");
  CHECK(op::read_config(doc, {.process_environment = false}).settings.sequence_parallel == false);
}

TEST_CASE("overrides follow Hydra: a key the config lacks, or one added twice, is an error") {
  op::document doc = op::parse_text(
      "model: {tensor_model_parallel_size: 2, pipeline_model_parallel_size: 1}\n"
      "train: {global_batch_size: 8}\n",
      "test.yaml", false);
  const auto message = [&](std::string_view o) {
    try {
      op::apply_override(doc, o);
    } catch (const op::input_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A typo in a key or a section: never silently added; the closest keys are named.
  CHECK(message("model.tensor_model_paralel_size=4") ==
        "override 'model.tensor_model_paralel_size=4': the config has no \"model.tensor_model_paralel_size\"; did you "
        "mean model.tensor_model_parallel_size? (+model.tensor_model_paralel_size=... adds a key, "
        "++model.tensor_model_paralel_size=... sets or adds)");
  CHECK(message("modle.x=1").starts_with("override 'modle.x=1': the config has no \"modle\"; did you mean model?"));
  CHECK(message("nothing_like_it=1").find("did you mean") == std::string::npos);
  // + adds only what is absent; ++ sets or adds; ~ deletes only what is there.
  CHECK(message("+model.tensor_model_parallel_size=4")
            .starts_with("override '+model.tensor_model_parallel_size=4': model.tensor_model_parallel_size is already "
                         "in the config (at "
                         "test.yaml:1:"));
  CHECK(message("~model.sequence_parallel").starts_with("override '~model.sequence_parallel': the config has no"));
  CHECK(message("+model.sequence_parallel=true") == "no error");
  CHECK(message("++model.sequence_parallel=false") == "no error");
  CHECK(message("++optimizer.lr=0.1") == "no error");
  CHECK(message("~model.sequence_parallel") == "no error");
  const op::bridge_config c = op::read_config(doc, {.process_environment = false});
  CHECK(c.settings.tensor_model_parallel_size == 2);
  CHECK_FALSE(c.settings.sequence_parallel);
  // Building a fragment: every form but ~ sets or adds.
  op::document fragment;
  op::apply_override(fragment, "model.tensor_model_parallel_size=4", op::override_mode::set_or_add);
  CHECK(fragment.tree["model"]["tensor_model_parallel_size"] == 4);
  CHECK(op::detail::edit_distance("paralel", "parallel") == 1);
  CHECK(op::detail::edit_distance("", "abc") == 3);
}

TEST_CASE("a pipeline layout given as Bridge dumps it, a list of stages of layer names, reads as the string") {
  std::ifstream file(std::string(OVERLAP_SOURCE_DIR) + "/tests/plan/mla_mtp.yaml");
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  const auto with_layout = [&](const std::string& layout) {
    std::string yaml = text;
    const std::string line = "  pipeline_model_parallel_layout: Etttt|ttttmL\n";
    REQUIRE(yaml.find(line) != std::string::npos);
    yaml.replace(yaml.find(line), line.size(), "  pipeline_model_parallel_layout:\n" + layout);
    return read_text(yaml, {.world_size = 16, .process_environment = false});
  };
  // Two stages as Core reads them: names in any case, with spaces around.
  const op::bridge_config c = with_layout(
      "  - - embedding\n    - decoder\n    - Decoder\n    - decoder\n    - decoder\n"
      "  - [decoder, decoder, ' decoder ', decoder, mtp, LOSS]\n");
  CHECK(c.workload.pipeline_layout == "Etttt|ttttmL");
  // An empty stage stays a stage.
  CHECK(with_layout("  - [embedding, decoder]\n  - []\n").workload.pipeline_layout == "Et|");
  CHECK_THROWS_WITH_AS(with_layout("  - [embedding, decodr]\n"),
                       doctest::Contains("model.pipeline_model_parallel_layout[0][1]: unknown layer name \"decodr\""),
                       op::input_error);
  CHECK_THROWS_WITH_AS(with_layout("  - [embedding, encoder]\n"), doctest::Contains("encoder layers"), op::input_error);
  CHECK_THROWS_WITH_AS(with_layout("  - embedding\n"), doctest::Contains("[0]: expected the layout as a string"),
                       op::input_error);
  CHECK_THROWS_WITH_AS(with_layout("  - [embedding, 3]\n"), doctest::Contains("expected a layer name"),
                       op::input_error);
  CHECK_THROWS_WITH_AS(with_layout("  {a: 1}\n"), doctest::Contains("expected the layout as a string"),
                       op::input_error);
}

TEST_CASE("moe_layer_freq: a list or an integer gives the dense layers among the MoE layers") {
  const std::string path = std::string(OVERLAP_SOURCE_DIR) + "/tests/plan/mla_mtp.yaml";  // 8 layers, MoE
  const auto with = [&](const std::string& override) {
    op::document doc = op::read_file(path);
    op::apply_override(doc, override);
    return op::read_config(doc, {.world_size = 16, .process_environment = false});
  };
  CHECK(with("++model.moe_layer_freq=[0,1,1,1,1,1,1,1]").workload.moe_layer_pattern ==
        std::vector<int>{0, 1, 1, 1, 1, 1, 1, 1});
  CHECK(with("++model.moe_layer_freq=2").workload.moe_layer_pattern == std::vector<int>{1, 0, 1, 0, 1, 0, 1, 0});
  CHECK(with("++model.moe_layer_freq=1").workload.moe_layer_pattern.empty());
  CHECK(with("++model.moe_layer_freq=[1,1,1,1,1,1,1,1]").workload.moe_layer_pattern.empty());
  CHECK_FALSE(has_note(with("++model.moe_layer_freq=[0,1,1,1,1,1,1,1]"), "moe_layer_freq"));
  CHECK_THROWS_WITH_AS(with("++model.moe_layer_freq=[0,1,1]"),
                       doctest::Contains("model.moe_layer_freq: the list has 3 entries, model.num_layers is 8"),
                       op::input_error);
  CHECK_THROWS_WITH_AS(with("++model.moe_layer_freq=[0,1,1,1,1,1,1,2]"),
                       doctest::Contains("model.moe_layer_freq[7]: expected 0 (dense) or 1 (MoE), got 2"),
                       op::input_error);
  CHECK_THROWS_WITH_AS(with("++model.moe_layer_freq=0"), doctest::Contains("expected an integer >= 1"),
                       op::input_error);
  CHECK_THROWS_WITH_AS(with("++model.moe_layer_freq='[0]*3+[1]*5'"),
                       doctest::Contains("write Python's expression as the list it makes"), op::input_error);
}

TEST_CASE("multi-latent attention, MTP layers and fp8 are read from a dump and simulate as read") {
  const op::bridge_config c =
      op::read_config(op::read_file(std::string(OVERLAP_SOURCE_DIR) + "/tests/plan/mla_mtp.yaml"),
                      {.world_size = 16, .process_environment = false});
  CHECK(c.workload.multi_latent_attention);
  CHECK(c.workload.q_lora_rank == 384);
  CHECK(c.workload.kv_lora_rank == 128);
  CHECK(c.workload.qk_head_dim == 64);
  CHECK(c.workload.qk_pos_emb_head_dim == 32);
  CHECK(c.workload.v_head_dim == 64);
  CHECK(c.workload.pipeline_layout == "Etttt|ttttmL");
  CHECK(c.settings.mtp_num_layers == 1);
  CHECK(c.settings.fp8);
  CHECK_FALSE(c.settings.fp4);
  CHECK(c.settings.recompute_modules.contains(ov::module::mla_up_proj));
  CHECK(c.not_modelled.empty());
  // A model without MLA: its sizes absent, nothing missing; q_lora_rank null is none.
  CHECK(read_example("dense_tp_pp_dp.yaml").missing_workload.empty());
  op::document doc = op::read_file(std::string(OVERLAP_SOURCE_DIR) + "/tests/plan/mla_mtp.yaml");
  op::apply_override(doc, "model.q_lora_rank=null");
  CHECK(op::read_config(doc, {.world_size = 16, .process_environment = false}).workload.q_lora_rank == 0);
}

TEST_CASE("overrides_between: one Bridge override per field that differs, at the place the config reads it") {
  op::document doc = op::parse_text(
      "model:\n  tensor_model_parallel_size: 2\n  sequence_parallel: false\n"
      "comm_overlap:\n  tp_comm_overlap: true\n",
      "t.yaml", false);
  const op::bridge_config c = op::read_config(doc, {.world_size = 8});
  ov::settings to = c.settings;
  CHECK(op::overrides_between(c, doc, c.settings, to).empty());
  to.sequence_parallel = true;    // held by the config: set
  to.overlap_grad_reduce = true;  // not held: set or add
  CHECK(op::overrides_between(c, doc, c.settings, to) ==
        std::vector<std::string>{"model.sequence_parallel=true", "++ddp.overlap_grad_reduce=true"});
  // The source judging asks: the places the document holds, and the same overrides.
  const op::bridge_source source(c, doc);
  CHECK(source.written_at("sequence_parallel") == "model.sequence_parallel");
  CHECK_FALSE(source.written_at("overlap_grad_reduce").has_value());
  CHECK(source.changes_between(c.settings, to).size() == 2);
}

TEST_CASE("the fp8 recipe says how fp8 parameters are kept: MXFP8 from a mapping, a recipe name or the model") {
  CHECK(read_text("mixed_precision: {bf16: true, fp8: e4m3, fp8_recipe: mxfp8, fp8_param_gather: true}\n")
            .workload.fp8_recipe_mxfp8);
  CHECK(read_text("mixed_precision: bf16_with_mxfp8_mixed\n").workload.fp8_recipe_mxfp8);
  CHECK(read_text("model: {bf16: true, fp8: e4m3, fp8_recipe: mxfp8}\n").workload.fp8_recipe_mxfp8);
  CHECK_FALSE(
      read_text("mixed_precision: {bf16: true, fp8: hybrid, fp8_recipe: tensorwise}\n").workload.fp8_recipe_mxfp8);
  CHECK_FALSE(read_text("mixed_precision: {bf16: true, fp8: hybrid}\n").workload.fp8_recipe_mxfp8);
  CHECK_FALSE(read_text("mixed_precision: bf16_with_fp8_current_scaling_mixed\n").workload.fp8_recipe_mxfp8);
  // The written config reads back the same recipe.
  const op::bridge_config c = read_text("mixed_precision: {bf16: true, fp8: e4m3, fp8_recipe: mxfp8}\n");
  const auto back = op::read_config(op::parse_text(op::write_config(c.settings, &c.workload).dump(), "t.json", true),
                                    {.process_environment = false});
  CHECK(back.workload.fp8_recipe_mxfp8);
}

TEST_CASE("the optimizer's precision fields are read as Bridge dumps them, refused where Megatron-Core asserts") {
  // DeepSeek-V3's optimizer section as dumped: torch dtypes as _call_ objects.
  const std::string deepseek =
      "optimizer:\n  use_precision_aware_optimizer: true\n  store_param_remainders: true\n"
      "  main_params_dtype: {_call_: false, _target_: torch.float32}\n"
      "  exp_avg_dtype: {_call_: false, _target_: torch.bfloat16}\n"
      "  exp_avg_sq_dtype: {_call_: false, _target_: torch.bfloat16}\n"
      "  main_grads_dtype: {_call_: false, _target_: torch.bfloat16}\n  fp8_recipe: null\n"
      "model: {bf16: true}\n";
  op::bridge_config c = read_text(deepseek + "mixed_precision: {bf16: true, fp8_recipe: null}\n");
  const ov::schedule::optimizer_precision& o = c.workload.optimizer;
  CHECK(o.use_precision_aware_optimizer);
  CHECK(o.main_params_bytes == 4);
  CHECK(o.exp_avg_bytes == 2);
  CHECK(o.exp_avg_sq_bytes == 2);
  CHECK_FALSE(o.fp8_recipe_with_own_scales);
  CHECK(ov::schedule::adam_state_bytes(o, c.settings.precision) == 6);
  // Bridge copies mixed_precision's fp8_recipe over the optimizer's: blockwise (the H100 recipe)
  // leaves the fp32 master copy to Megatron-Core; a mapping without one has the default tensorwise;
  // a recipe name says delayed or not.
  c = read_text(deepseek + "mixed_precision: {bf16: true, fp8: hybrid, fp8_recipe: blockwise}\n");
  CHECK(c.workload.optimizer.fp8_recipe_with_own_scales);
  CHECK(ov::schedule::adam_state_bytes(c.workload.optimizer, c.settings.precision) == 8);
  CHECK(read_text(deepseek + "mixed_precision: {bf16: true}\n").workload.optimizer.fp8_recipe_with_own_scales);
  CHECK_FALSE(read_text(deepseek + "mixed_precision: bf16_with_fp8_delayed_scaling_mixed\n")
                  .workload.optimizer.fp8_recipe_with_own_scales);
  CHECK_FALSE(read_text(deepseek).workload.optimizer.fp8_recipe_with_own_scales);
  // Without a dump's optimizer section: plain Adam, 12 bytes.
  CHECK(ov::schedule::adam_state_bytes(read_text("model: {bf16: true}\n").workload.optimizer, ov::dtype::bf16) == 12);
  // The written config reads back the same state.
  const auto back = op::read_config(op::parse_text(op::write_config(c.settings, &c.workload).dump(), "t.json", true),
                                    {.process_environment = false});
  CHECK(ov::schedule::adam_state_bytes(back.workload.optimizer, back.settings.precision) == 8);

  CHECK(message("optimizer: {exp_avg_dtype: torch.bfloat16}\n")
            .find("optimizer.exp_avg_dtype: exp_avg_dtype can only be fp32 without "
                  "optimizer.use_precision_aware_optimizer") != std::string::npos);
  CHECK(message("optimizer: {use_precision_aware_optimizer: true, exp_avg_dtype: torch.int64}\n")
            .find("optimizer.exp_avg_dtype: unknown torch dtype \"torch.int64\"") != std::string::npos);
  CHECK(message("optimizer: {use_precision_aware_optimizer: true, exp_avg_dtype: 3}\n")
            .find("optimizer.exp_avg_dtype: expected a torch dtype") != std::string::npos);
  CHECK(
      message("optimizer: {use_precision_aware_optimizer: true, optimizer: sgd}\n").find("only supported with adam") !=
      std::string::npos);
  const op::bridge_config sgd = read_text("optimizer: {optimizer: sgd}\n");
  CHECK(has_note(sgd, "optimizer.optimizer = \"sgd\" is not modelled"));
  CHECK(sgd.not_modelled.size() == 1);
}

TEST_CASE("a packed SFT dump trains on its packed sequences, not on model.seq_length") {
  // As the Llama-3-8B SFT dump: model.seq_length 16384, the dataset's sequences packed to 4096.
  const std::string sft =
      "model: {seq_length: 16384}\n"
      "dataset: {seq_length: 4096, packed_sequence_specs: {packed_sequence_size: 4096}}\n";
  op::bridge_config c = read_text(sft);
  CHECK(c.workload.seq_length == 4096);
  CHECK(has_note(c,
                 "model.seq_length = 16384 disagrees with dataset.packed_sequence_specs.packed_sequence_size = "
                 "4096; Bridge trains on the dataset's sequences"));
  // Packed to a size other than the dataset's sequence length: the packed size.
  CHECK(read_text("model: {seq_length: 8192}\ndataset: {seq_length: 2048, packed_sequence_specs: "
                  "{packed_sequence_size: 8192}}\n")
            .workload.seq_length == 8192);
  // No packing (a size of 0 or less, or none): the dataset's sequence length, else the model's.
  CHECK(read_text("model: {seq_length: 16384}\ndataset: {seq_length: 4096, packed_sequence_specs: "
                  "{packed_sequence_size: -1}}\n")
            .workload.seq_length == 4096);
  CHECK(read_text("model: {seq_length: 2048}\ndataset: {sequence_length: 2048}\n").workload.seq_length == 2048);
  c = read_text("model: {seq_length: 1024}\n");
  CHECK(c.workload.seq_length == 1024);
  CHECK_FALSE(has_note(c, "seq_length"));
  // None at all: the model's field is named as missing.
  bool named = false;
  for (const std::string& m : read_text("model: {hidden_size: 64}\n").missing_workload)
    named = named || m == "model.seq_length";
  CHECK(named);
}

TEST_CASE("Bridge's own datasets must agree with model.seq_length, as ConfigContainer.validate asserts") {
  CHECK(message("model: {seq_length: 8192}\n"
                "dataset: {_target_: megatron.bridge.training.config.GPTDatasetConfig, seq_length: 4096}\n")
            .find("model.seq_length = 8192 disagrees with dataset.seq_length = 4096, which Bridge refuses for a "
                  "GPTDatasetConfig") != std::string::npos);
  CHECK(message("model: {seq_length: 4096}\n"
                "dataset: {_target_: megatron.bridge.training.config.GPTDatasetConfig, sequence_length: 4096}\n") ==
        "(no error)");
  // HFDatasetConfig (the SFT dumps') is not checked: its sequences are what the step trains on.
  CHECK(message("model: {seq_length: 16384}\n"
                "dataset: {_target_: megatron.bridge.data.builders.hf_dataset.HFDatasetConfig, seq_length: 4096}\n") ==
        "(no error)");
}
