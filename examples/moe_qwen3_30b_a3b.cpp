// A Qwen3-30B-A3B-like MoE run (128 experts, no shared experts) on H100 nodes: expert
// parallelism 16 with the alltoall dispatcher, bf16, the MoE all-to-all hidden under the other
// micro-batch's compute (combined 1F1B), and expert weight gradients delayed under the backward
// dispatch. The distributed optimizer turns on DP grad-reduce overlap (DP-1), so delayed wgrad
// needs Transformer Engine 2.8 or later (WG-1).
#include <overlap/overlap.hpp>

#include "show.hpp"

namespace ov = overlap;
using qwen3_30b_a3b =
    ov::config<ov::tp<1>, ov::pp<1>, ov::dp<16>, ov::ep<16>, ov::num_moe_experts<128>,
               ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
               ov::distributed_optimizer<>, ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>,
               ov::te_version<2, 8, 0>, ov::gpu<ov::gpu_model::h100>>;

int main(int argc, char** argv) {
  // 4 of the model's 48 layers keep the simulation small; sizes as the model's.
  overlap::schedule::workload w{.num_layers = 4,
                                .micro_batches = 4,
                                .seq_length = 4096,
                                .hidden_size = 2048,
                                .ffn_hidden_size = 6144,
                                .num_attention_heads = 32,
                                .num_query_groups = 4,
                                .vocab_size = 151936,
                                .moe_router_topk = 8,
                                .moe_ffn_hidden_size = 768};
  show<qwen3_30b_a3b>("Qwen3-30B-A3B-like MoE, EP16", w, "qwen3_30b_a3b", argc, argv);
}
