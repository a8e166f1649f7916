#pragma once
// Helpers for the executor's tests: the executor over the recording shim, a program builder,
// and resources that satisfy a whole program (every kernel logs its name and stream).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <overlap/cuda/executor.hpp>
#include <overlap/schedule/program.hpp>

#include "recording_api.hpp"

namespace shim {

namespace sc = overlap::schedule;
using executor = overlap::cuda::basic_executor<recording_api>;
using resources = executor::resources;

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

/// Resources for the whole program: logging kernels, and for every communication op a buffer
/// at `memory` with exactly the bytes it needs on each side (bf16).
inline resources supply(const sc::program& p, const std::map<std::string, std::unique_ptr<comm_state>>& comms,
                        char* memory = arena) {
  resources r;
  for (const auto& [name, state] : comms) r.comms[name] = state.get();
  for (const sc::op& o : p.ops) {
    if (o.kind == sc::op_kind::compute) {
      r.kernels[o.name] = [name = o.name](int stream) {
        s().log.push_back("kernel " + name + " s" + std::to_string(stream));
      };
    } else if (sc::is_communication(o.kind)) {
      const std::int64_t n = static_cast<std::int64_t>(p.comms[static_cast<std::size_t>(o.comm)].ranks.size());
      std::int64_t send = o.bytes, recv = o.bytes;
      if (o.kind == sc::op_kind::send) recv = 0;
      if (o.kind == sc::op_kind::recv) send = 0;
      if (o.kind == sc::op_kind::collective && o.coll == sc::collective::all_gather) send = o.bytes / n;
      if (o.kind == sc::op_kind::collective && o.coll == sc::collective::reduce_scatter) recv = o.bytes / n;
      auto& b = r.buffers[o.name];
      b.send = send > 0 ? memory : nullptr;
      b.send_bytes = std::max(b.send_bytes, send);
      b.recv = recv > 0 ? memory + (1 << 12) : b.recv;
      b.recv_bytes = std::max(b.recv_bytes, recv);
      b.dtype = dtype::bf16;
    }
  }
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
