// EXPECT: [EP-16]
// early attention memory release is an EP-overlap feature; alone it does nothing.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
#ifdef OVERLAP_CONTROL
                           ov::overlap_moe_expert_parallel_comm<>,
#endif
                           ov::ep_overlap_early_attn_memory_release<>>;
