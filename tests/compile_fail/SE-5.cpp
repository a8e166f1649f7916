// EXPECT: [SE-5]
// shared-expert overlap on a model without shared experts: upstream ignores the flag.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
#ifdef OVERLAP_CONTROL
                           ov::moe_shared_expert_intermediate_size<2048>,
#endif
                           ov::moe_shared_expert_overlap<>>;
