// EXPECT: [SE-1]
// shared-expert overlap with the default allgather dispatcher.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_shared_expert_intermediate_size<2048>, ov::moe_shared_expert_overlap<>,
#ifdef OVERLAP_CONTROL
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>
#else
                           ov::moe_token_dispatcher_type<ov::dispatcher::allgather>
#endif
                           >;
