// EXPECT: [EP-11]
// EP overlap and shared-expert overlap both on: they exclude each other.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::moe_shared_expert_intermediate_size<2048>,
#ifndef OVERLAP_CONTROL
                           ov::moe_shared_expert_overlap<>,
#endif
                           ov::overlap_moe_expert_parallel_comm<>>;
