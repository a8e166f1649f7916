#pragma once
// Helpers for the executor's tests: the executor over the recording shim, and resources that
// satisfy a whole program (every kernel logs the op's display name and stream; the buffer
// provider gives each communication op exactly the bytes it needs on each side).
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <overlap/cuda/executor.hpp>
#include <overlap/program/program.hpp>

#include "recording_api.hpp"

namespace shim {

namespace sc = overlap::schedule;
using executor = overlap::cuda::basic_executor<recording_api>;
using resources = executor::resources;
using buffer = executor::buffer;
using overlap::schedule::op_type;

/// One communicator state per program communicator, each with the program's size and its rank.
inline std::map<std::string, std::unique_ptr<comm_state>> comms_for(const sc::program& p) {
  std::map<std::string, std::unique_ptr<comm_state>> comms;
  for (const sc::communicator& c : p.comms) {
    auto state = std::make_unique<comm_state>();
    state->name = c.name;
    state->count = static_cast<int>(c.ranks.size());
    for (std::size_t i = 0; i < c.ranks.size(); ++i)
      if (c.ranks[i] == p.rank) state->rank = static_cast<int>(i);
    comms.emplace(c.name, std::move(state));
  }
  return comms;
}

/// A kernel that logs "kernel <display name> s<stream>".
inline void log_kernel(const sc::op_key& key, int stream) {
  s().log.push_back("kernel " + sc::display_name(key) + " s" + std::to_string(stream));
}

/// A provider for the communicators `p` names: the send side at `memory`, the receive side at
/// `memory` + 4096, each with exactly the bytes the op needs (bf16).
inline resources::buffer_provider exact_buffers(const sc::program& p, char* memory = arena) {
  return [sizes = p.comms, memory](const sc::op& o) {
    const std::int64_t n = static_cast<std::int64_t>(sizes[static_cast<std::size_t>(o.comm)].ranks.size());
    std::int64_t send = o.bytes, recv = o.bytes;
    if (o.kind == sc::op_kind::send) recv = 0;
    if (o.kind == sc::op_kind::recv) send = 0;
    if (o.kind == sc::op_kind::collective && o.coll == sc::collective::all_gather) send = o.bytes / n;
    if (o.kind == sc::op_kind::collective && o.coll == sc::collective::reduce_scatter) recv = o.bytes / n;
    return buffer{.send = send > 0 ? memory : nullptr,
                  .send_bytes = send,
                  .recv = recv > 0 ? memory + (1 << 12) : nullptr,
                  .recv_bytes = recv,
                  .dtype = dtype::bf16};
  };
}

/// Resources for the whole program: the communicators, `log_kernel` for every compute type it
/// has, and `exact_buffers`.
inline resources supply(const sc::program& p, const std::map<std::string, std::unique_ptr<comm_state>>& comms,
                        char* memory = arena) {
  resources r;
  for (const auto& [name, state] : comms) r.comms[name] = state.get();
  for (const sc::op& o : p.ops)
    if (o.kind == sc::op_kind::compute) r.kernels[o.key.type] = log_kernel;
  r.buffers = exact_buffers(p, memory);
  return r;
}

/// `r` with each buffer its provider gives changed by `edit(op, buffer&)`.
template <class Edit>
resources edit_buffers(resources r, Edit edit) {
  r.buffers = [inner = std::move(r.buffers), edit](const sc::op& o) {
    buffer b = inner(o);
    edit(o, b);
    return b;
  };
  return r;
}

/// The log lines that start with `prefix`.
inline std::vector<std::string> lines_starting(const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& line : s().log)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

}  // namespace shim
