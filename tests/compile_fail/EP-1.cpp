// EXPECT: [EP-1]
// EP overlap with ep == 1 has no expert all-to-all to hide.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<
#ifdef OVERLAP_CONTROL
    ov::ep<8>,
#else
    ov::ep<1>,
#endif
    ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
    ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>>;
