// EXPECT: [EP-17]
// dispatch-backward/expert-wgrad overlap needs Transformer Engine 2.3.0 or later.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_dispatch_backward_with_experts_wgrad<>,
#ifdef OVERLAP_CONTROL
                           ov::te_version<2, 3, 0>
#else
                           ov::te_version<2, 2, 0>
#endif
                           >;
