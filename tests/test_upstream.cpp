// read_as_upstream(): a settings value judged as upstream runs it (rules::upstream on each E rule).
#include <doctest/doctest.h>

#include <string_view>
#include <vector>

#include <overlap/rules/upstream.hpp>
#include <overlap/schedule/step.hpp>

#include "sweep.hpp"

namespace ov = overlap;

namespace {
std::vector<std::string_view> ids(const ov::upstream_reading& r) {
  std::vector<std::string_view> out;
  for (const ov::upstream_finding& f : r.lenient) out.push_back(f.rule->id);
  return out;
}

ov::settings moe() {
  ov::settings s;
  s.expert_model_parallel_size = 8;
  s.data_parallel_size = 8;
  s.num_moe_experts = 64;
  s.precision = ov::dtype::bf16;
  return s;
}
}  // namespace

TEST_CASE("every E rule upstream lets run says what upstream does, in words and on the settings") {
  int lenient = 0;
  for (const ov::rules::rule& x : ov::rules::table) {
    CHECK_MESSAGE((x.upstream_of == nullptr) == (x.as_upstream_runs == nullptr), x.id);
    CHECK_MESSAGE((x.upstream_of == nullptr) == x.upstream_does.empty(), x.id);
    if (x.upstream_of) {
      CHECK_MESSAGE(ov::rules::is_error(x.kind), x.id);
      ++lenient;
    }
  }
  // TP-1, TP-2, TP-9, TP-17, TE-4, PP-16, DP-9, DP-21, DP-22, SE-5, FX-1, FX-7, FX-11.
  CHECK(lenient == 13);
  CHECK(ov::rules::find("DP-12").upstream_for(ov::settings{}) == ov::rules::upstream::enforces);
  CHECK(ov::rules::find("DP-9").upstream_for(ov::settings{}) == ov::rules::upstream::unchecked);
}

TEST_CASE("param gather overlap without grad reduce overlap: Bridge runs it as written, and it builds") {
  // Megatron-LM's validate_args refuses it (DP-9); Bridge and Core do not check it, and Bridge's
  // DeepSeek-V3 H100 recipe runs it (rule DP-9, docs/rules.md).
  ov::settings s;
  s.data_parallel_size = 4;
  s.distributed_optimizer = true;
  s.overlap_grad_reduce = false;
  CHECK(ov::validate(s).violates("DP-9"));
  const ov::report runnable = ov::validate_runnable(s);
  CHECK(runnable.ok());
  REQUIRE(runnable.resolved);
  CHECK(runnable.resolved->overlap_param_gather);
  CHECK(!runnable.resolved->overlap_grad_reduce);
  const ov::upstream_reading r = ov::read_as_upstream(s);
  CHECK(r.runs());
  CHECK(r.as_run == s);
  CHECK(ids(r) == std::vector<std::string_view>{"DP-9"});
  CHECK(r.lenient[0].what == ov::rules::upstream::unchecked);
  CHECK(r.lenient[0].changed.empty());
  // The step builds: the parameters gathered on the dp stream, the gradients reduced on compute.
  const ov::schedule::workload w{.num_layers = 2,
                                 .micro_batches = 2,
                                 .seq_length = 256,
                                 .hidden_size = 256,
                                 .ffn_hidden_size = 512,
                                 .num_attention_heads = 4,
                                 .vocab_size = 1024};
  const auto step = ov::schedule::compose_step(s, *runnable.resolved, w);
  bool gathered_on_dp = false, reduced_on_compute = false;
  for (const auto& p : step)
    for (const auto& op : p.ops) {
      const auto role = p.streams[static_cast<std::size_t>(op.stream)].role;
      gathered_on_dp |=
          op.key.type == ov::schedule::op_type::dp_param_gather && role == ov::schedule::stream_role::dp_comm;
      reduced_on_compute |=
          op.key.type == ov::schedule::op_type::dp_grad_reduce && role == ov::schedule::stream_role::compute;
    }
  CHECK(gathered_on_dp);
  CHECK(reduced_on_compute);
  // A rule upstream enforces beside it still stops the run.
  s.num_buckets = 2;
  s.bucket_size = 1000000;  // DP-12
  CHECK(ov::validate_runnable(s).violates("DP-12"));
  CHECK(!ov::validate_runnable(s).violates("DP-9"));
  CHECK(!ov::read_as_upstream(s).runs());
}

TEST_CASE("TP overlap at tp 1: upstream turns it off, then ignores the userbuffer config it left") {
  ov::settings s;
  s.data_parallel_size = 8;
  s.tp_comm_overlap = true;
  s.tp_comm_overlap_cfg = ov::ub::user_config{};
  const ov::upstream_reading r = ov::read_as_upstream(s);
  CHECK(r.runs());
  CHECK(ids(r) == std::vector<std::string_view>{"TP-1", "TP-17"});  // TP-17 fires only after TP-1's action
  CHECK(r.lenient[0].what == ov::rules::upstream::turns_off);
  CHECK(r.lenient[0].changed == std::vector<std::string_view>{"tp_comm_overlap"});
  CHECK(r.lenient[1].what == ov::rules::upstream::ignores);
  CHECK(r.lenient[1].changed == std::vector<std::string_view>{"tp_comm_overlap_cfg"});
  CHECK(r.as_run.tp_comm_overlap == false);
  CHECK(!r.as_run.tp_comm_overlap_cfg);
  REQUIRE(r.errors.resolved);
  CHECK(!r.errors.resolved->tp_comm_overlap);
}

TEST_CASE("a rule upstream enforces stays an error, the lenient ones around it are still applied") {
  ov::settings s;
  s.data_parallel_size = 8;
  s.distributed_optimizer = true;
  s.num_buckets = 2;
  s.bucket_size = 1000000;        // DP-12, an error upstream
  s.overlap_grad_reduce = false;  // DP-1 derives overlap_param_gather: DP-9, which Bridge does not check
  s.batch_p2p_comm = true;        // pp 1: PP-16, ignored upstream
  const ov::upstream_reading r = ov::read_as_upstream(s);
  CHECK(!r.runs());
  CHECK(r.errors.violates("DP-12"));
  CHECK(r.errors.count() == 1);
  CHECK(ids(r) == std::vector<std::string_view>{"PP-16", "DP-9"});
  CHECK(!r.as_run.batch_p2p_comm);
}

TEST_CASE("FX-11: the backend without the flex dispatcher is ignored, except ncclep, which upstream rejects") {
  ov::settings s = moe();
  s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
  s.moe_flex_dispatcher_backend = ov::flex_backend::deepep;
  ov::upstream_reading r = ov::read_as_upstream(s);
  CHECK(r.runs());
  CHECK(ids(r) == std::vector<std::string_view>{"FX-11"});
  CHECK(!r.as_run.moe_flex_dispatcher_backend);
  s.moe_flex_dispatcher_backend = ov::flex_backend::ncclep;
  r = ov::read_as_upstream(s);
  CHECK(!r.runs());
  CHECK(r.errors.violates("FX-11"));
  CHECK(r.lenient.empty());
}

TEST_CASE("the flex dispatcher without a backend: upstream falls back to alltoall") {
  ov::settings s = moe();
  s.moe_token_dispatcher_type = ov::dispatcher::flex;
  const ov::upstream_reading r = ov::read_as_upstream(s);
  CHECK(r.runs());
  CHECK(ids(r) == std::vector<std::string_view>{"FX-7"});
  CHECK(r.as_run.moe_token_dispatcher_type == ov::dispatcher::alltoall);
}

TEST_CASE("DP flags without data-parallel peers: only the ones set true are dropped") {
  ov::settings s;
  s.overlap_grad_reduce = true;
  s.align_param_gather = true;
  s.overlap_param_gather = false;
  const ov::upstream_reading r = ov::read_as_upstream(s);
  CHECK(r.runs());
  CHECK(ids(r) == std::vector<std::string_view>{"DP-21"});
  CHECK(r.lenient[0].changed == std::vector<std::string_view>{"overlap_grad_reduce", "align_param_gather"});
  CHECK(r.as_run.overlap_param_gather == false);
}

TEST_CASE("over the sweep: upstream's reading ends, keeps valid settings as they are and leaves only errors") {
  for (std::size_t i = 0; i < 4000; ++i) {
    const ov::settings s = sweep::settings_of(i);
    const ov::report direct = ov::validate(s);
    const ov::upstream_reading r = ov::read_as_upstream(s);
    if (direct.ok()) {
      CHECK(r.lenient.empty());
      CHECK(r.as_run == s);
    }
    for (const ov::diagnostic& d : r.errors)
      CHECK_MESSAGE(ov::rules::find(d.id).upstream_for(r.as_run) == ov::rules::upstream::enforces, d.id, " at ", i);
    // Upstream lets run what this project rejects, never the other way round.
    for (const ov::diagnostic& d : r.errors) CHECK_MESSAGE(!direct.ok(), d.id, " at ", i);
  }
}
