// A dense Llama-70B-like run on H100 nodes: TP4 with sequence parallelism and userbuffer
// overlap from upstream's tuned preset, an interleaved pipeline (PP4 x VPP5) and DP4 with the
// distributed optimizer. Derivations fill in p2p overlap (PP-1), grad-reduce and param-gather
// overlap with aligned gathers (DP-1, DP-2), and CUDA_DEVICE_MAX_CONNECTIONS=1 for TP (ENV-6).
#include <overlap/overlap.hpp>

#include "show.hpp"

namespace ov = overlap;
using llama_70b =
    ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
               ov::tp_comm_overlap_cfg<ov::ub::userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192>, ov::pp<4>, ov::vpp<5>,
               ov::dp<4>, ov::distributed_optimizer<>, ov::precision<ov::dtype::bf16>, ov::gpu<ov::gpu_model::h100>>;

int main(int argc, char** argv) {
  // 20 of the model's 80 layers (one per pp x vpp chunk) keep the simulation small; sizes as the
  // model's.
  overlap::schedule::workload w{.num_layers = 20,
                                .micro_batches = 4,
                                .seq_length = 8192,
                                .hidden_size = 8192,
                                .ffn_hidden_size = 28672,
                                .num_attention_heads = 64,
                                .vocab_size = 128256};
  show<llama_70b>("dense TP4 x PP4 (VPP5) x DP4, TP preset", w, "llama_70b", argc, argv);
}
