// EXPECT: [WG-4c]
// delayed wgrad in an attn CUDA graph rejects attention bias (add_bias_linear defaults to true).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>,
                           ov::gradient_accumulation_fusion<>, ov::cuda_graph_impl<ov::graph_impl::transformer_engine>,
#ifdef OVERLAP_CONTROL
                           ov::add_bias_linear<false>,
#endif
                           ov::cuda_graph_modules<ov::graph_module::attn>>;
