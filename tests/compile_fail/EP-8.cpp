// EXPECT: [EP-8]
// EP overlap with a recompute_method set: upstream rejects any recompute method.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
#ifndef OVERLAP_CONTROL
                           ov::recompute_method<ov::recompute::uniform>,
#endif
                           ov::overlap_moe_expert_parallel_comm<>>;
