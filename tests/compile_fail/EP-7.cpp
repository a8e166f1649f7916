// EXPECT: [EP-7]
// EP overlap with full activation recompute: upstream rejects it (selective is fine).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>,
#ifdef OVERLAP_CONTROL
                           ov::recompute_granularity<ov::granularity::selective>
#else
                           ov::recompute_granularity<ov::granularity::full>
#endif
                           >;
