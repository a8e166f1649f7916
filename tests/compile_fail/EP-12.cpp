// EXPECT: [EP-12]
// EP overlap with two MTP layers: upstream supports at most one.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>,
#ifdef OVERLAP_CONTROL
                           ov::mtp_num_layers<1>
#else
                           ov::mtp_num_layers<2>
#endif
                           >;
