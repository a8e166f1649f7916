// EXPECT: [WG-4b]
// delayed wgrad in a CUDA graph needs gradient_accumulation_fusion (static addresses).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>,
                           ov::add_bias_linear<false>, ov::cuda_graph_impl<ov::graph_impl::transformer_engine>,
#ifdef OVERLAP_CONTROL
                           ov::gradient_accumulation_fusion<>,
#endif
                           ov::cuda_graph_modules<ov::graph_module::attn>>;
