// EXPECT: [SE-2]
// shared-expert overlap while the shared experts are selectively recomputed.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::moe_shared_expert_intermediate_size<2048>, ov::moe_shared_expert_overlap<>,
                           ov::recompute_granularity<ov::granularity::selective>,
#ifdef OVERLAP_CONTROL
                           ov::recompute_modules<ov::module::core_attn>
#else
                           ov::recompute_modules<ov::module::core_attn, ov::module::shared_experts>
#endif
                           >;
