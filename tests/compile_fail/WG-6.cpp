// EXPECT: [WG-6]
// delayed wgrad hides under the EP overlap's dispatch; without it the flag does nothing.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
#ifdef OVERLAP_CONTROL
                           ov::overlap_moe_expert_parallel_comm<>,
#endif
                           ov::delay_wgrad_compute<>>;
