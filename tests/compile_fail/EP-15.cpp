// EXPECT: [EP-15]
// EP overlap with TE CUDA graphs capturing the moe module.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>,
                           ov::cuda_graph_impl<ov::graph_impl::transformer_engine>,
#ifdef OVERLAP_CONTROL
                           ov::cuda_graph_modules<ov::graph_module::attn>
#else
                           ov::cuda_graph_modules<ov::graph_module::attn, ov::graph_module::moe>
#endif
                           >;
