#pragma once
/// @file
/// The PP family's generator: one step of a pipeline of `pp` stages running the non-interleaved
/// 1F1B schedule (no TP/DP/EP composition yet; the interleaved schedule of vpp is not built yet).
///
/// Stage s runs min(pp - s - 1, m) warm-up forwards, then alternates one forward and one backward,
/// then drains the remaining backwards. The sends that follow a compute step and the receives the
/// next compute step needs form one NCCL group (upstream's batched p2p), which is what keeps
/// neighbouring stages from waiting on each other in a cycle; the compute stream waits for the
/// group at once (batch_p2p_comm), so pipeline communication is exposed in this schedule.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <overlap/schedule/program.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

/// One stage's 1F1B order: +i is the forward of micro-batch i, -(i + 1) its backward.
inline std::vector<int> one_f_one_b(int stage, int stages, int micro_batches) {
  const int warmup = std::min(stages - stage - 1, micro_batches);
  std::vector<int> order;
  int forward = 0, backward = 0;
  for (; forward < warmup; ++forward) order.push_back(forward);
  while (forward < micro_batches) {
    order.push_back(forward++);
    order.push_back(-(++backward));
  }
  while (backward < micro_batches) order.push_back(-(++backward));
  return order;
}

inline std::vector<program> pipeline_parallel_step(const settings& s, const resolved_settings&,
                                                   const workload& w) {
  const int stages = s.pipeline_model_parallel_size;
  const int layers = w.layers / stages;
  const std::int64_t activation = w.tokens() * w.hidden * w.element_bytes();
  std::vector<program> step;
  for (int stage = 0; stage < stages; ++stage) {
    program p;
    p.rank = stage;
    p.streams = {{stream_role::compute, 0}, {stream_role::pp_send, -1}};
    const int compute = 0, p2p = 1;
    // One communicator per neighbouring pair, named by its lower stage.
    const auto pair_name = [](int lower) { return "pp" + std::to_string(lower); };
    if (stage > 0) p.comms.push_back({pair_name(stage - 1), {stage - 1, stage}});
    if (stage + 1 < stages) p.comms.push_back({pair_name(stage), {stage, stage + 1}});
    const int prev_comm = 0, next_comm = stage > 0 ? 1 : 0;
    int group = 0;
    std::vector<op> pending;  // the sends of the last compute step, grouped with the next receives
    const auto flush = [&](std::vector<op> recvs) {
      for (op& o : recvs) pending.push_back(std::move(o));
      if (pending.empty()) return;
      for (op& o : pending) {
        o.group = group;
        p.ops.push_back(std::move(o));
      }
      ++group;
      pending.clear();
      const int e = p.num_events++;
      p.ops.push_back(op{.kind = op_kind::record, .stream = p2p, .event = e});
      p.ops.push_back(op{.kind = op_kind::wait, .stream = compute, .event = e});
    };
    const auto message = [&](op_kind kind, int comm, int peer_stage, std::string name) {
      return op{.kind = kind, .stream = p2p, .name = std::move(name), .comm = comm,
                .peer = peer_stage < stage ? 0 : 1, .bytes = activation, .family = family::pp};
    };
    for (const int action : one_f_one_b(stage, stages, w.micro_batches)) {
      const bool forward = action >= 0;
      const int mb = forward ? action : -action - 1;
      const std::string tag = "_mb" + std::to_string(mb);
      std::vector<op> recvs;
      if (forward && stage > 0)
        recvs.push_back(message(op_kind::recv, prev_comm, stage - 1, "recv_activation" + tag));
      if (!forward && stage + 1 < stages)
        recvs.push_back(message(op_kind::recv, next_comm, stage + 1, "recv_grad" + tag));
      flush(std::move(recvs));
      const double flops = (forward ? 1 : 2) * w.layer_forward_flops() * layers;
      p.ops.push_back(op{.kind = op_kind::compute, .stream = compute,
                         .name = (forward ? "fwd" : "bwd") + tag, .flops = flops});
      if (forward && stage + 1 < stages) {
        p.ops.push_back(op{.kind = op_kind::record, .stream = compute, .event = p.num_events});
        p.ops.push_back(op{.kind = op_kind::wait, .stream = p2p, .event = p.num_events++});
        pending.push_back(message(op_kind::send, next_comm, stage + 1, "send_activation" + tag));
      }
      if (!forward && stage > 0) {
        p.ops.push_back(op{.kind = op_kind::record, .stream = compute, .event = p.num_events});
        p.ops.push_back(op{.kind = op_kind::wait, .stream = p2p, .event = p.num_events++});
        pending.push_back(message(op_kind::send, prev_comm, stage - 1, "send_grad" + tag));
      }
    }
    flush({});
    step.push_back(std::move(p));
  }
  return step;
}

}  // namespace overlap::schedule
