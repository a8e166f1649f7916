// EXPECT: [WG-4a]
// delayed wgrad captured in an attn CUDA graph needs Transformer Engine 2.12.0.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<
    ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
    ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::overlap_moe_expert_parallel_comm<>,
    ov::delay_wgrad_compute<>, ov::gradient_accumulation_fusion<>, ov::add_bias_linear<false>,
    ov::cuda_graph_impl<ov::graph_impl::transformer_engine>, ov::cuda_graph_modules<ov::graph_module::attn>,
#ifdef OVERLAP_CONTROL
    ov::te_version<2, 12, 0>
#else
    ov::te_version<2, 11, 0>
#endif
    >;
