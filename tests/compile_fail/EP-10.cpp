// EXPECT: [EP-10]
// EP overlap with the moe module in recompute_modules.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>,
                           ov::recompute_granularity<ov::granularity::selective>,
#ifdef OVERLAP_CONTROL
                           ov::recompute_modules<ov::module::core_attn>
#else
                           ov::recompute_modules<ov::module::core_attn, ov::module::moe>
#endif
                           >;
