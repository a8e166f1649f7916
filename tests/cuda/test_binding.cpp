// Binding by op type: a hand-written program of many compute types runs with a few callables
// (one per kind of kernel, each told the op's key) and one buffer provider; a communication
// type bound to the trainer's own callable replaces NCCL for that type only.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include <overlap/cuda/bind.hpp>

#include "shim_fixture.hpp"

using namespace shim;
using K = sc::op_kind;
namespace oc = overlap::cuda;

namespace {
constexpr sc::op_type_set set_of(std::initializer_list<op_type> types) {
  sc::op_type_set s;
  for (const op_type t : types) s.add(t);
  return s;
}

/// What a generated config's `cfg::schedule` exposes: the op types its programs can contain.
struct dense_schedule {
  static constexpr sc::op_type_set op_types =
      set_of({op_type::embedding_fprop, op_type::layernorm_fprop,   op_type::qkv_fprop,       op_type::attn_core_fprop,
              op_type::proj_fprop,      op_type::fc1_fprop,         op_type::fc2_fprop,       op_type::lm_head_fprop,
              op_type::lm_head_bprop,   op_type::fc2_dgrad,         op_type::fc2_wgrad,       op_type::fc1_dgrad,
              op_type::attn_core_bprop, op_type::qkv_wgrad,         op_type::embedding_bprop, op_type::optimizer_step,
              op_type::tp_all_gather,   op_type::tp_reduce_scatter, op_type::event_record,    op_type::event_wait});
};

sc::op compute(op_type t, int layer = -1, int micro_batch = 0) {
  return {.kind = K::compute, .stream = 0, .key = {.type = t, .at = {.layer = layer, .micro_batch = micro_batch}}};
}

/// Rank 1 of a tp pair: one layer forward and backward around the embedding and the LM head,
/// the qkv input gathered and the proj output reduce-scattered on the tp stream.
sc::program dense_program() {
  sc::program p;
  p.rank = 1;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::tp_comm, -1}};
  p.comms = {{"tp", {0, 1}}};
  p.num_events = 4;
  const auto tp = [](op_type t, op_type slot, sc::collective c) {
    return sc::op{.kind = K::collective,
                  .stream = 1,
                  .key = {.type = t, .slot = slot, .at = {.layer = 0, .micro_batch = 0}},
                  .coll = c,
                  .comm = 0,
                  .bytes = 256};
  };
  const auto record = [](int stream, int event) {
    return sc::op{.kind = K::record, .stream = stream, .key = {.type = op_type::event_record}, .event = event};
  };
  const auto wait = [](int stream, int event) {
    return sc::op{.kind = K::wait, .stream = stream, .key = {.type = op_type::event_wait}, .event = event};
  };
  p.ops = {compute(op_type::embedding_fprop),
           compute(op_type::layernorm_fprop, 0),
           record(0, 0),
           wait(1, 0),
           tp(op_type::tp_all_gather, op_type::qkv_fprop, sc::collective::all_gather),
           record(1, 1),
           wait(0, 1),
           compute(op_type::qkv_fprop, 0),
           compute(op_type::attn_core_fprop, 0),
           compute(op_type::proj_fprop, 0),
           record(0, 2),
           wait(1, 2),
           tp(op_type::tp_reduce_scatter, op_type::proj_fprop, sc::collective::reduce_scatter),
           record(1, 3),
           wait(0, 3),
           compute(op_type::fc1_fprop, 0),
           compute(op_type::fc2_fprop, 0),
           compute(op_type::lm_head_fprop),
           compute(op_type::lm_head_bprop),
           compute(op_type::fc2_dgrad, 0),
           compute(op_type::fc2_wgrad, 0),
           compute(op_type::fc1_dgrad, 0),
           compute(op_type::attn_core_bprop, 0),
           compute(op_type::qkv_wgrad, 0),
           compute(op_type::embedding_bprop),
           compute(op_type::optimizer_step)};
  return p;
}

/// A kernel standing for a family of kernels: logs its own name and the key it was given.
auto logs_as(std::string what) {
  return [what](const sc::op_key& key, int stream) {
    s().log.push_back(what + " " + sc::display_name(key) + " s" + std::to_string(stream));
  };
}
}  // namespace

TEST_CASE("kernels bound by type: 16 compute types, 7 callables, one buffer provider, in program order") {
  const sc::program p = dense_program();
  const auto comms = comms_for(p);
  resources r;
  r.comms["tp"] = comms.at("tp").get();
  r.kernels = oc::kernels_for<dense_schedule>(
      oc::on<op_type::qkv_fprop, op_type::proj_fprop, op_type::fc1_fprop, op_type::fc2_fprop, op_type::lm_head_fprop>(
          logs_as("gemm")),
      oc::on<op_type::fc2_dgrad, op_type::fc1_dgrad, op_type::lm_head_bprop>(logs_as("dgrad")),
      oc::on<op_type::fc2_wgrad, op_type::qkv_wgrad>(logs_as("wgrad")),
      oc::on<op_type::attn_core_fprop, op_type::attn_core_bprop>(logs_as("flash")),
      oc::on<op_type::embedding_fprop, op_type::embedding_bprop>(logs_as("embedding")),
      oc::on<op_type::layernorm_fprop>(logs_as("norm")), oc::on<op_type::optimizer_step>(logs_as("adam")));
  // One provider for every communication op: the gathered qkv input and the proj output, by slot.
  r.buffers = [](const sc::op& o) {
    s().log.push_back("buffer for " + sc::display_name(o));
    char* base = arena + (o.key.slot == op_type::qkv_fprop ? 0 : 1024);
    return buffer{.send = base, .send_bytes = 256, .recv = base + 512, .recv_bytes = 256, .dtype = dtype::bf16};
  };
  reset();
  executor exec(p, std::move(r));
  CHECK(lines_starting("buffer for") == std::vector<std::string>{"buffer for tp_all_gather qkv_fprop l0 mb0",
                                                                 "buffer for tp_reduce_scatter proj_fprop l0 mb0"});
  s().log.clear();
  exec.run();
  const std::vector<std::string> expected = {
      "embedding embedding_fprop mb0 s100",
      "norm layernorm_fprop l0 mb0 s100",
      "record e200 s100",
      "wait s101 e200",
      "all_gather tp s101 @0 -> @512 count 64",
      "record e201 s101",
      "wait s100 e201",
      "gemm qkv_fprop l0 mb0 s100",
      "flash attn_core_fprop l0 mb0 s100",
      "gemm proj_fprop l0 mb0 s100",
      "record e202 s100",
      "wait s101 e202",
      "reduce_scatter tp s101 @1024 -> @1536 count 64",
      "record e203 s101",
      "wait s100 e203",
      "gemm fc1_fprop l0 mb0 s100",
      "gemm fc2_fprop l0 mb0 s100",
      "gemm lm_head_fprop mb0 s100",
      "dgrad lm_head_bprop mb0 s100",
      "dgrad fc2_dgrad l0 mb0 s100",
      "wgrad fc2_wgrad l0 mb0 s100",
      "dgrad fc1_dgrad l0 mb0 s100",
      "flash attn_core_bprop l0 mb0 s100",
      "wgrad qkv_wgrad l0 mb0 s100",
      "embedding embedding_bprop mb0 s100",
      "adam optimizer_step mb0 s100",
  };
  CHECK(s().log == expected);
}

TEST_CASE("a kernel table entry can be set by hand, and an unbound type stays empty") {
  resources r;
  r.kernels[op_type::fc1_fprop] = log_kernel;
  CHECK(r.kernels.contains(op_type::fc1_fprop));
  CHECK_FALSE(r.kernels.contains(op_type::fc2_fprop));
  const resources::kernel_table table = oc::kernels_for<dense_schedule>(
      oc::on<op_type::embedding_fprop, op_type::layernorm_fprop, op_type::qkv_fprop, op_type::attn_core_fprop,
             op_type::proj_fprop, op_type::fc1_fprop, op_type::fc2_fprop, op_type::lm_head_fprop,
             op_type::lm_head_bprop, op_type::fc2_dgrad, op_type::fc2_wgrad, op_type::fc1_dgrad,
             op_type::attn_core_bprop, op_type::qkv_wgrad, op_type::embedding_bprop, op_type::optimizer_step>(
          log_kernel),
      oc::on<op_type::router_fprop>(log_kernel));  // a type the schedule never emits may be bound
  CHECK(table.contains(op_type::router_fprop));
  CHECK_FALSE(table.contains(op_type::tp_all_gather));
}

namespace {
/// Rank 6 of an ep group {4 5 6 7}: router, dispatch, experts, combine on one layer.
sc::program moe_program() {
  sc::program p;
  p.rank = 6;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::ep_comm, 0}};
  p.comms = {{"ep", {4, 5, 6, 7}}};
  p.num_events = 2;
  const auto a2a = [](op_type t) {
    return sc::op{.kind = K::collective,
                  .stream = 1,
                  .key = {.type = t, .at = {.layer = 2, .micro_batch = 1}},
                  .coll = sc::collective::all_to_all,
                  .comm = 0,
                  .bytes = 64};
  };
  p.ops = {compute(op_type::router_fprop, 2, 1),         {.kind = K::record, .stream = 0, .event = 0},
           {.kind = K::wait, .stream = 1, .event = 0},   a2a(op_type::ep_dispatch),
           {.kind = K::record, .stream = 1, .event = 1}, {.kind = K::wait, .stream = 0, .event = 1},
           compute(op_type::experts_fprop, 2, 1),        a2a(op_type::ep_combine)};
  p.ops[7].stream = 0;
  return p;
}
}  // namespace

TEST_CASE("a communication type bound to the trainer's callable replaces NCCL and needs no buffer or communicator") {
  const sc::program p = moe_program();
  const auto comms = comms_for(p);
  resources r;
  r.kernels[op_type::router_fprop] = log_kernel;
  r.kernels[op_type::experts_fprop] = log_kernel;
  for (const op_type t : {op_type::ep_dispatch, op_type::ep_combine})
    r.comm_overrides[t] = [](const sc::op& o, int stream) {
      s().log.push_back("deepep " + sc::display_name(o) + " " + std::to_string(o.bytes) + " bytes s" +
                        std::to_string(stream));
    };
  r.buffers = [](const sc::op& o) -> buffer {
    FAIL("no buffer is needed for ", sc::display_name(o));
    return {};
  };
  reset();
  executor exec(p, std::move(r));  // no communicator either
  s().log.clear();
  exec.run();
  const std::vector<std::string> expected = {"kernel router_fprop l2 mb1 s100",
                                             "record e200 s100",
                                             "wait s101 e200",
                                             "deepep ep_dispatch l2 mb1 64 bytes s101",
                                             "record e201 s101",
                                             "wait s100 e201",
                                             "kernel experts_fprop l2 mb1 s100",
                                             "deepep ep_combine l2 mb1 64 bytes s100"};
  CHECK(s().log == expected);
  CHECK(exec.calls_per_step() == expected.size() + 4);  // + the launch check after each callable

  s().fail_call = "get_last_error";
  s().fail_nth = 1;
  s().fail_status = recording_api::cuda_launch_failure;
  CHECK_THROWS_WITH_AS(exec.run(),
                       "rank 6, op 3 'ep_dispatch l2 mb1' (all_to_all on 'ep', stream 1): [EXEC-CUDA] communication "
                       "override launch failed: cudaErrorLaunchFailure: unspecified launch failure",
                       overlap::cuda::call_error);
}

TEST_CASE("overriding one communication type leaves the others on NCCL, with their buffers and communicator") {
  const sc::program p = moe_program();
  const auto comms = comms_for(p);
  auto r = supply(p, comms);
  r.comm_overrides[op_type::ep_dispatch] = [](const sc::op& o, int) {
    s().log.push_back("deepep " + sc::display_name(o));
  };
  int asked = 0;
  reset();
  executor exec(p, edit_buffers(std::move(r), [&](const sc::op& o, buffer&) {
                  CHECK(o.key.type == op_type::ep_combine);
                  ++asked;
                }));
  CHECK(asked == 1);
  s().log.clear();
  exec.run();
  CHECK(s().log[3] == "deepep ep_dispatch l2 mb1");
  CHECK(lines_starting("send ep s100").size() == 4);  // the combine: n sends and n receives
  CHECK(lines_starting("recv ep s100").size() == 4);
}
