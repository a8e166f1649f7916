// EXPECT: [EP-3]
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::overlap_moe_expert_parallel_comm<>,
#ifdef OVERLAP_CONTROL
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>
#else
                           ov::moe_token_dispatcher_type<ov::dispatcher::allgather>
#endif
                           >;
