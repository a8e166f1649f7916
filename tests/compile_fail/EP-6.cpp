// EXPECT: [EP-6]
// EP overlap with a plain (non-interleaved) pipeline: upstream requires vpp when pp > 1.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>,
#ifdef OVERLAP_CONTROL
                           ov::vpp<2>,
#endif
                           ov::pp<4>>;
