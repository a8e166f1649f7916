// What the tests of generated programs on the recording shim share: a small model (so the
// buffers the programs name stay small; the shim only needs their address space) and the
// composed tp2 pp2 vpp2 dp2 ep2 MoE step.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>

#include "recording_api.hpp"

namespace shim {

/// Resets the shim and gives it address space for `p`'s largest buffer pair (it never touches
/// the memory; its log names addresses from `s().base`).
inline std::unique_ptr<char[]> reset_with_memory_for(const overlap::schedule::program& p) {
  std::int64_t largest = 0;
  for (const overlap::schedule::op& o : p.ops) largest = std::max(largest, o.bytes);
  std::unique_ptr<char[]> memory(new char[static_cast<std::size_t>(largest) + 8192]);
  reset();
  s().base = memory.get();
  return memory;
}

inline overlap::schedule::workload small_workload(int layers, int micro_batches) {
  overlap::schedule::workload w;
  w.num_layers = layers;
  w.micro_batches = micro_batches;
  w.seq_length = 128;
  w.hidden_size = 256;
  w.ffn_hidden_size = 512;
  w.num_attention_heads = 8;
  w.vocab_size = 1024;
  return w;
}

namespace ovc = overlap;
/// Every family at size 2, MoE with the alltoall dispatcher and EP overlap: 8 ranks.
using composed_moe =
    ovc::config<ovc::tp<2>, ovc::sequence_parallel<>, ovc::tp_comm_overlap<>, ovc::pp<2>, ovc::vpp<2>, ovc::dp<2>,
                ovc::ep<2>, ovc::etp<1>, ovc::num_moe_experts<8>,
                ovc::moe_token_dispatcher_type<ovc::dispatcher::alltoall>, ovc::distributed_optimizer<>,
                ovc::precision<ovc::dtype::bf16>, ovc::overlap_moe_expert_parallel_comm<>>;
inline overlap::schedule::workload composed_moe_workload() {
  overlap::schedule::workload w = small_workload(4, 4);
  w.moe_router_topk = 2;
  w.moe_ffn_hidden_size = 512;
  return w;
}

}  // namespace shim
