// Uneven pipelines: Megatron-Core's layout string and its first/last-stage and embedding/loss
// accounting, as layer counts per virtual stage (hand-computed), and steps built from them.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/schedule/pipeline_split.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
std::vector<int> split(const sc::workload& w, int pp, int vpp, int mtp = 0) {
  std::vector<std::string> problems;
  const std::vector<int> out = sc::split_layers(w, pp, vpp, mtp, problems);
  const std::string first_problem = problems.empty() ? std::string() : problems.front();
  INFO(first_problem);
  CHECK(problems.empty());
  return out;
}
std::string problem(const sc::workload& w, int pp, int vpp, int mtp = 0) {
  std::vector<std::string> problems;
  CHECK(sc::split_layers(w, pp, vpp, mtp, problems).empty());
  return problems.empty() ? std::string("none") : problems.front();
}
/// The layers of each pipeline stage, over its chunks.
std::vector<int> per_stage(const std::vector<int>& v, int pp) {
  std::vector<int> out(static_cast<std::size_t>(pp), 0);
  for (std::size_t i = 0; i < v.size(); ++i) out[i % static_cast<std::size_t>(pp)] += v[i];
  return out;
}
}  // namespace

TEST_CASE("the layout string: stages by '|', groups and characters repeated, commas cosmetic") {
  const auto stages = sc::parse_pipeline_layout("Et|(tt|)*30mL");
  REQUIRE(stages.size() == 32);
  CHECK(stages[0] == sc::layout_stage{1, 1, 0, 0});
  for (std::size_t v = 1; v <= 30; ++v) CHECK(stages[v] == sc::layout_stage{0, 2, 0, 0});
  CHECK(stages[31] == sc::layout_stage{0, 0, 1, 1});
  // Megatron-Core's documented PP16 VPP2 example: "Et*3|(tt|)*29,m|L".
  const auto doc = sc::parse_pipeline_layout("Et*3|(tt|)*29,m|L");
  REQUIRE(doc.size() == 32);
  CHECK(doc[0] == sc::layout_stage{1, 3, 0, 0});
  CHECK(doc[30] == sc::layout_stage{0, 0, 1, 0});
  CHECK(doc[31] == sc::layout_stage{0, 0, 0, 1});
  // A group repeats its "x*n" as Megatron-Core unrolls it: DeepSeek-V3 on 16 stages.
  const auto sixteen = sc::parse_pipeline_layout("Et*4|(t*4|)*14tmL");
  REQUIRE(sixteen.size() == 16);
  CHECK(sixteen[0] == sc::layout_stage{1, 4, 0, 0});
  for (std::size_t v = 1; v <= 14; ++v) CHECK(sixteen[v] == sc::layout_stage{0, 4, 0, 0});
  CHECK(sixteen[15] == sc::layout_stage{0, 1, 1, 1});
  CHECK_THROWS_WITH_AS(sc::parse_pipeline_layout("E(t(t)*2)*2"), doctest::Contains("groups do not nest"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sc::parse_pipeline_layout("Et|(tt|*3"), doctest::Contains("'(' is not closed at character 4"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sc::parse_pipeline_layout("Etx|L"), doctest::Contains("unexpected 'x'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(sc::parse_pipeline_layout("Et*|L"), doctest::Contains("'*' needs a count"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(sc::parse_pipeline_layout("(t*999999)*999999"), doctest::Contains("over"),
                       std::invalid_argument);
}

TEST_CASE("DeepSeek-V3's layout: 61 layers and one MTP layer on pp 8 x vpp 4") {
  sc::workload w;
  w.num_layers = 61;
  w.pipeline_layout = "Et|(tt|)*30mL";
  const std::vector<int> v = split(w, 8, 4, 1);
  REQUIRE(v.size() == 32);
  CHECK(v[0] == 1);
  CHECK(v[31] == 0);
  CHECK(std::count(v.begin(), v.end(), 2) == 30);
  // Stage p holds virtual stages p, p + 8, p + 16, p + 24: the first 1 + 2 + 2 + 2, the last 2 + 2 + 2 + 0.
  CHECK(per_stage(v, 8) == std::vector<int>{7, 8, 8, 8, 8, 8, 8, 6});
  CHECK(problem(w, 8, 4, 0) == "pipeline_model_parallel_layout has 1 MTP layers ('m'), mtp_num_layers is 0");
  CHECK(problem(w, 4, 4, 1) == "pipeline_model_parallel_layout has 32 stages, not pp x vpp (16)");
  w.num_layers = 60;
  CHECK(problem(w, 8, 4, 1) == "pipeline_model_parallel_layout has 61 transformer layers ('t'), num_layers is 60");
  w.pipeline_layout = "t|(tt|)*30mEL";
  w.num_layers = 61;
  CHECK(problem(w, 8, 4, 1) == "pipeline_model_parallel_layout: the embedding 'E' must be once, in the first stage");
}

TEST_CASE("Qwen3-235B's accounting: 94 layers + embedding + loss on pp 8 is 12 a stage, 11 at the ends") {
  sc::workload w;
  w.num_layers = 94;
  w.account_for_embedding_in_pipeline_split = true;
  w.account_for_loss_in_pipeline_split = true;
  CHECK(split(w, 8, 1) == std::vector<int>{11, 12, 12, 12, 12, 12, 12, 11});
  // With vpp 2 the embedding and loss take a layer of the first and the last virtual stage:
  // 96 / 16 = 6 each; stage 0's chunks 5 and 6, stage 7's 6 and 5.
  const std::vector<int> v = split(w, 8, 2);
  CHECK(v.front() == 5);
  CHECK(v.back() == 5);
  CHECK(per_stage(v, 8) == std::vector<int>{11, 12, 12, 12, 12, 12, 12, 11});
  w.account_for_loss_in_pipeline_split = false;
  CHECK(problem(w, 8, 1) ==
        "num_layers (94 + 1 for the embedding/loss) must be a multiple of pp x vpp (8) (Megatron-Core "
        "refuses it too); give pipeline_model_parallel_layout or num_layers_in_first/last_pipeline_stage "
        "for an uneven split");
}

TEST_CASE("first and last stage counts: the others share the rest evenly, each stage split over its chunks") {
  sc::workload w;
  w.num_layers = 30;
  w.num_layers_in_first_pipeline_stage = 6;
  w.num_layers_in_last_pipeline_stage = 6;
  CHECK(split(w, 4, 1) == std::vector<int>{6, 9, 9, 6});
  // vpp 3: 6 / 3 = 2 and 9 / 3 = 3 per chunk, virtual stage c x 4 + p.
  CHECK(split(w, 4, 3) == std::vector<int>{2, 3, 3, 2, 2, 3, 3, 2, 2, 3, 3, 2});
  w.num_layers_in_last_pipeline_stage = 0;
  CHECK(split(w, 4, 1) == std::vector<int>{6, 8, 8, 8});
  w.num_layers_in_first_pipeline_stage = 5;
  CHECK(problem(w, 4, 1) ==
        "the layers left by num_layers_in_first/last_pipeline_stage (25) must split evenly over the other 3 stages");
  w.num_layers_in_first_pipeline_stage = 6;
  CHECK(problem(w, 4, 4) == "pipeline stage 0's 6 layers must split evenly over its 4 chunks (vpp)");
  w.account_for_loss_in_pipeline_split = true;
  CHECK(doctest::String(problem(w, 4, 1).c_str()) == doctest::Contains("exclude each other"));
}

TEST_CASE("an uneven pipeline's step: each stage runs its own layers, verifies and simulates") {
  ov::settings s;
  s.pipeline_model_parallel_size = 4;
  s.virtual_pipeline_model_parallel_size = 2;
  s.data_parallel_size = 1;
  s.precision = ov::dtype::bf16;
  const ov::resolved_settings r = ov::derive(s);
  sc::workload w;
  w.num_layers = 9;
  w.micro_batches = 8;
  w.hidden_size = 1024;
  w.ffn_hidden_size = 2048;
  w.num_attention_heads = 8;
  w.seq_length = 1024;
  w.vocab_size = 32000;
  w.pipeline_layout = "Et|tt|tt|t|t|t|t|L";  // virtual stages c x 4 + p: stage 3's second chunk holds only the loss
  const auto step = sc::compose_step(s, r, w);
  REQUIRE(step.size() == 4);
  CHECK(ov::verify::verify_report(step).empty());
  // Forward qkv GEMMs per stage: its layers x micro-batches (no recompute).
  const std::vector<int> layers{1 + 1, 2 + 1, 2 + 1, 1 + 0};  // chunk 0 + chunk 1
  for (int p = 0; p < 4; ++p) {
    int qkv = 0;
    for (const auto& o : step[static_cast<std::size_t>(p)].ops) qkv += o.key.type == sc::op_type::qkv_fprop;
    CAPTURE(p);
    CHECK(qkv == layers[static_cast<std::size_t>(p)] * w.micro_batches);
  }
  const ov::sim::result res = ov::sim::simulate(step, ov::sim::analytic_cost_model(ov::sim::h100_node()));
  CHECK_FALSE(res.deadlock);
  // Split evenly, the same model fails: 9 is not a multiple of 8.
  w.pipeline_layout.clear();
  CHECK_THROWS_WITH_AS(sc::compose_step(s, r, w), doctest::Contains("must be a multiple of pp x vpp (8)"),
                       std::invalid_argument);
}
