// The verifier on small hand-built steps: a correct step verifies, and each kind of fault injected
// into it is rejected with the rank, the op and the reason.
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/program/rendezvous.hpp>
#include <overlap/verify/verify.hpp>

namespace sc = overlap::schedule;
namespace ov = overlap::verify;

namespace {

sc::op compute(int stream, sc::op_key key, std::vector<int> reads, std::vector<int> writes) {
  return sc::op{.kind = sc::op_kind::compute,
                .stream = stream,
                .key = key,
                .reads = std::move(reads),
                .writes = std::move(writes)};
}
sc::op_key layer_backward(int layer) { return {.type = sc::op_type::qkv_dgrad, .at = {.layer = layer}}; }
const sc::op_key optimizer{.type = sc::op_type::optimizer_step};
sc::op coll(int stream, int comm, std::int64_t seq, sc::collective c, std::vector<int> reads, std::vector<int> writes,
            std::int64_t bytes = 1 << 20) {
  return sc::op{.kind = sc::op_kind::collective,
                .stream = stream,
                .coll = c,
                .comm = comm,
                .seq = seq,
                .bytes = bytes,
                .reads = std::move(reads),
                .writes = std::move(writes)};
}
sc::op p2p(sc::op_kind kind, int stream, int comm, int peer, std::vector<int> buffers) {
  sc::op o{.kind = kind, .stream = stream, .comm = comm, .peer = peer, .bytes = 4096};
  (kind == sc::op_kind::send ? o.reads : o.writes) = std::move(buffers);
  return o;
}
sc::op record(int stream, int event) { return sc::op{.kind = sc::op_kind::record, .stream = stream, .event = event}; }
sc::op wait(int stream, int event) { return sc::op{.kind = sc::op_kind::wait, .stream = stream, .event = event}; }

/// Two DP ranks: backward produces a gradient (buffer 0) on the compute stream, the dp stream
/// reduce-scatters it into buffer 1 while compute runs on, and the optimizer waits for it.
std::vector<sc::program> dp_step() {
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank) {
    sc::program p;
    p.rank = rank;
    p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}};
    p.comms = {{"dp", {0, 1}}};
    p.num_events = 2;
    p.buffers.resize(3);
    p.ops = {compute(0, layer_backward(1), {}, {0}),
             record(0, 0),
             wait(1, 0),
             coll(1, 0, 0, sc::collective::reduce_scatter, {0}, {1}),
             record(1, 1),
             compute(0, layer_backward(0), {}, {2}),
             wait(0, 1),
             compute(0, optimizer, {1, 2}, {})};
    step.push_back(p);
  }
  return step;
}

std::string reasons(const std::vector<ov::finding>& found, const std::vector<sc::program>& step) {
  std::string all;
  for (const auto& f : found) all += ov::describe(f, step) + "\n";
  return all;
}

bool mentions(const std::vector<ov::finding>& found, int rank, int op, const std::string& text) {
  for (const auto& f : found)
    if (f.rank == rank && f.op == op && f.reason.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("a correct step verifies") {
  const auto step = dp_step();
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(found.empty());
}

TEST_CASE("fault: ranks issue a communicator's collectives in different orders") {
  auto step = dp_step();
  step[1].ops[3].coll = sc::collective::all_reduce;
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(mentions(found, 1, 3, "in different orders"));
}

TEST_CASE("fault: a collective one rank never issues") {
  auto step = dp_step();
  step[1].ops[3] = compute(1, layer_backward(0), {0}, {1});
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(mentions(found, 1, -1, "never issued"));
}

TEST_CASE("fault: an event wait before its record") {
  auto step = dp_step();
  std::swap(step[0].ops[1], step[0].ops[2]);  // wait(1, 0) now comes before record(0, 0)
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(mentions(found, 0, 1, "before any record"));
}

TEST_CASE("fault: a consumer that does not depend on its producer") {
  auto step = dp_step();
  step[0].ops[6] = compute(0, layer_backward(0), {}, {});  // the optimizer no longer waits for the dp stream
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(mentions(found, 0, 7, "reads buffer 1 (workspace) without depending on op 3"));
}

TEST_CASE("fault: a buffer reused before its readers are done") {
  auto step = dp_step();
  step[0].ops[5] = compute(0, layer_backward(0), {}, {0});  // overwrites the gradient being reduced
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(mentions(found, 0, 5, "overwrites buffer 0 (workspace) while op 3 may still read it"));
}

TEST_CASE("fault: collectives on two communicators issued in opposite orders hang") {
  // Each communicator sees one collective, so per-communicator order agrees, but rank 0 issues
  // tp then ep on one stream and rank 1 ep then tp: the upstream EP-overlap hang.
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank) {
    sc::program p;
    p.rank = rank;
    p.streams = {{sc::stream_role::compute, 0}};
    p.comms = {{"tp", {0, 1}}, {"ep", {0, 1}}};
    p.buffers.resize(2);
    sc::op tp = coll(0, 0, 0, sc::collective::all_gather, {}, {0});
    sc::op ep = coll(0, 1, 0, sc::collective::all_to_all, {}, {1});
    tp.key.type = sc::op_type::tp_all_gather;
    ep.key.type = sc::op_type::ep_dispatch;
    p.ops = rank == 0 ? std::vector<sc::op>{tp, ep} : std::vector<sc::op>{ep, tp};
    step.push_back(p);
  }
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  REQUIRE(found.size() == 1);
  CHECK(found[0].reason.find("dependency cycle") != std::string::npos);
  CHECK(found[0].reason.find("tp_all_gather") != std::string::npos);
  CHECK(found[0].reason.find("ep_dispatch") != std::string::npos);
  std::swap(step[1].ops[0], step[1].ops[1]);  // the control: the same order on both ranks
  CHECK(ov::verify(step).empty());
}

TEST_CASE("fault: pipeline neighbours that both send first on one stream deadlock") {
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank) {
    sc::program p;
    p.rank = rank;
    p.streams = {{sc::stream_role::pp_send, 0}};
    p.comms = {{"pp", {0, 1}}};
    p.buffers.resize(2);
    p.ops = {p2p(sc::op_kind::send, 0, 0, 1 - rank, {0}), p2p(sc::op_kind::recv, 0, 0, 1 - rank, {1})};
    step.push_back(p);
  }
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  REQUIRE(found.size() == 1);
  CHECK(found[0].reason.find("dependency cycle") != std::string::npos);
  std::swap(step[1].ops[0], step[1].ops[1]);  // the control: rank 1 receives first
  CHECK(ov::verify(step).empty());
}

TEST_CASE("fault: a send without its recv, and mismatched sizes") {
  std::vector<sc::program> step;
  for (int rank = 0; rank < 2; ++rank) {
    sc::program p;
    p.rank = rank;
    p.streams = {{sc::stream_role::pp_send, 0}};
    p.comms = {{"pp", {0, 1}}};
    p.buffers.resize(1);
    if (rank == 0)
      p.ops = {p2p(sc::op_kind::send, 0, 0, 1, {0}), p2p(sc::op_kind::send, 0, 0, 1, {0})};
    else
      p.ops = {p2p(sc::op_kind::recv, 0, 0, 0, {0})};
    step.push_back(p);
  }
  step[1].ops[0].bytes = 8192;
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(mentions(found, 0, 1, "no matching recv"));
  CHECK(mentions(found, 0, 0, "meets a recv of 8192 bytes"));
}

TEST_CASE("fault: malformed ops are named") {
  auto step = dp_step();
  step[0].ops[0].stream = 7;
  step[1].ops[3].comm = 4;
  step[1].ops[7].reads = {9};
  const auto found = ov::verify(step);
  INFO(reasons(found, step));
  CHECK(mentions(found, 0, 0, "stream 7 does not exist"));
  CHECK(mentions(found, 1, 3, "communicator 4 does not exist"));
  CHECK(mentions(found, 1, 7, "buffer 9 does not exist"));
}

TEST_CASE("match_rendezvous: from the caller's lists of communication ops, the groups a scan of every op finds") {
  std::vector<sc::program> step = dp_step();
  std::vector<std::vector<std::uint32_t>> lists(step.size());
  for (std::size_t pi = 0; pi < step.size(); ++pi)
    for (std::size_t i = 0; i < step[pi].ops.size(); ++i)
      if (sc::is_communication(step[pi].ops[i].kind)) lists[pi].push_back(static_cast<std::uint32_t>(i));
  const sc::rendezvous_set scanned = sc::match_rendezvous(step);
  const sc::rendezvous_set listed = sc::match_rendezvous(step, {.communication = &lists});
  REQUIRE(scanned.groups.size() > 0);
  REQUIRE(listed.groups.size() == scanned.groups.size());
  for (std::size_t g = 0; g < scanned.groups.size(); ++g) {
    REQUIRE(listed.groups[g].size() == scanned.groups[g].size());
    for (std::size_t k = 0; k < scanned.groups[g].size(); ++k) {
      CHECK(listed.groups[g][k].program == scanned.groups[g][k].program);
      CHECK(listed.groups[g][k].op == scanned.groups[g][k].op);
    }
  }
  lists.pop_back();
  CHECK_THROWS_WITH_AS((void)sc::match_rendezvous(step, {.communication = &lists}),
                       doctest::Contains("1 lists of communication ops for 2 programs"), std::invalid_argument);
}

TEST_CASE("fault: a collective whose sequence number is not its place on its communicator") {
  auto step = dp_step();
  step[1].ops[3].seq = 5;
  const auto found = ov::verify(step);
  CAPTURE(reasons(found, step));
  CHECK(mentions(found, 1, 3, "sequence number 5 on dp where the issue order gives 0"));
}

TEST_CASE("a buffer is its index: two entries describing one tensor are refused, which hid a race") {
  // Op 0 writes the activation through buffer 0 on stream 0, op 1 reads it through buffer 1 on
  // stream 1 with no event between: a race the data-flow check sees only through one index.
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::tp_comm, 0}};
  const sc::buffer act{.kind = sc::buffer_kind::activation, .at = {.layer = 1, .micro_batch = 0}};
  p.buffers = {act, act};
  p.ops = {{.kind = sc::op_kind::compute, .stream = 0, .writes = {0}},
           {.kind = sc::op_kind::compute, .stream = 1, .reads = {1}}};
  const std::string found = ov::verify_report({p});
  CHECK(found.find("buffer 1 (activation l1 mb0) describes the same tensor as buffer 0; a buffer is its index") !=
        std::string::npos);
  // Listed once, the race is found.
  p.buffers = {act};
  p.ops[1].reads = {0};
  CHECK(ov::verify_report({p}).find("reads buffer 0 (activation l1 mb0) without depending on op 0") !=
        std::string::npos);
}

TEST_CASE("a read of an activation that no op of the program writes is named, with its op and the fix") {
  // Layer 1's fc1 reads its input, activation l1 mb0, and its parameters; no op computes the input.
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}};
  p.buffers = {
      {.kind = sc::buffer_kind::parameters, .of = sc::op_type::fc1_fprop, .at = {.layer = 1}},
      {.kind = sc::buffer_kind::activation, .at = {.layer = 1, .micro_batch = 0}},
      {.kind = sc::buffer_kind::workspace, .of = sc::op_type::fc1_fprop, .at = {.layer = 1, .micro_batch = 0}}};
  const sc::op_key fc1{.type = sc::op_type::fc1_fprop, .at = {.layer = 1, .micro_batch = 0}};
  p.ops = {compute(0, fc1, {0, 1}, {2})};
  const auto found = ov::verify({p});
  INFO(reasons(found, {p}));
  REQUIRE(found.size() == 1);
  CHECK(ov::describe(found[0], {p}) ==
        "rank 0 op 0 (fc1_fprop l1 mb0): reads buffer 1 (activation l1 mb0), which no op of this program writes "
        "(only model state and userbuffers exist before the step); write it first, with the op that computes or "
        "receives it, or read the buffer that op writes");
  // The control: layer 0's fc2 writes the input first. The parameters, which no op writes either,
  // are model state: they exist before the step.
  const sc::op_key fc2{.type = sc::op_type::fc2_fprop, .at = {.layer = 0, .micro_batch = 0}};
  p.ops.insert(p.ops.begin(), compute(0, fc2, {}, {1}));
  CHECK(ov::verify({p}).empty());
}

TEST_CASE("the first layer's input is the batch where no embedding computes it, else it must be written") {
  // A GEMM slot built alone reads activation l0 as the data loader's batch; beside an embedding
  // that writes another buffer, the same read has nothing to compute it.
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}};
  p.buffers = {{.kind = sc::buffer_kind::activation, .at = {.layer = 0, .micro_batch = 0}},
               {.kind = sc::buffer_kind::workspace, .of = sc::op_type::qkv_fprop, .at = {.layer = 0, .micro_batch = 0}},
               {.kind = sc::buffer_kind::workspace, .of = sc::op_type::embedding_fprop, .at = {.micro_batch = 0}}};
  const sc::op_key qkv{.type = sc::op_type::qkv_fprop, .at = {.layer = 0, .micro_batch = 0}};
  p.ops = {compute(0, qkv, {0}, {1})};
  CHECK(ov::verify({p}).empty());
  const sc::op_key embedding{.type = sc::op_type::embedding_fprop, .at = {.micro_batch = 0}};
  p.ops.insert(p.ops.begin(), compute(0, embedding, {}, {2}));
  const auto found = ov::verify({p});
  INFO(reasons(found, {p}));
  CHECK(mentions(found, 0, 1, "reads buffer 0 (activation l0 mb0), which no op of this program writes"));
}
