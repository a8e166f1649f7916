// EXPECT: [EP-4]
// EP overlap left at the default fp32 precision: upstream needs bf16 or fp16.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>,
#ifdef OVERLAP_CONTROL
                           ov::precision<ov::dtype::bf16>
#else
                           ov::precision<ov::dtype::fp32>
#endif
                           >;
