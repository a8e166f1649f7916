// EXPECT: [WG-1]
// delayed wgrad with (derived) grad-reduce overlap needs TE 2.8.0; upstream Bridge checks 2.7.0.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::distributed_optimizer<>,
                           ov::delay_wgrad_compute<>,
#ifdef OVERLAP_CONTROL
                           ov::te_version<2, 8, 0>
#else
                           ov::te_version<2, 7, 0>
#endif
                           >;
