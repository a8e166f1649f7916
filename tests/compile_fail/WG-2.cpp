// EXPECT: [WG-2]
// delayed wgrad needs Transformer Engine 2.7.0 or later.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>,
#ifdef OVERLAP_CONTROL
                           ov::te_version<2, 7, 0>
#else
                           ov::te_version<2, 6, 0>
#endif
                           >;
