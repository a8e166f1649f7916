// The README's quick start: a MoE run with TP, PP with virtual stages, DP, EP, TP overlap,
// EP overlap and delayed weight gradients, declared as one type.
#include <overlap/overlap.hpp>

#include "show.hpp"

namespace ov = overlap;
using cfg = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<8>, ov::ep<16>, ov::etp<1>,
                       ov::distributed_optimizer<>, ov::num_moe_experts<128>,
                       ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                       ov::tp_comm_overlap<>, ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>>;

static_assert(cfg::resolved.overlap_p2p_comm);             // PP-1: pp > 1 with vpp
static_assert(*cfg::resolved.bucket_size == 134'217'728);  // DP-1: distributed optimizer, dp > 1

int main(int argc, char** argv) {
  overlap::schedule::workload w{.num_layers = 8, .micro_batches = 4, .moe_router_topk = 8, .moe_ffn_hidden_size = 1536};
  show<cfg>("quick start", w, "quick_start", argc, argv);
}
