// EXPECT: [EP-9]
// EP overlap with recompute_num_layers set: upstream requires it unset.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
#ifndef OVERLAP_CONTROL
                           ov::recompute_num_layers<1>,
#endif
                           ov::overlap_moe_expert_parallel_comm<>>;
