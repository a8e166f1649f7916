// EXPECT: [WG-7]
// delayed wgrad with Transformer Engine CUDA graphs needs Transformer Engine 2.10.0.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                           ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>,
                           ov::cuda_graph_impl<ov::graph_impl::transformer_engine>,
                           ov::cuda_graph_modules<ov::graph_module::moe_router>,
#ifdef OVERLAP_CONTROL
                           ov::te_version<2, 10, 0>
#else
                           ov::te_version<2, 9, 0>
#endif
                           >;
