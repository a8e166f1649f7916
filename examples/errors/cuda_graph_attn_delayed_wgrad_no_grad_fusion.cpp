// EXPECT: [WG-4b]
// Pitfall: capturing attention in Transformer Engine CUDA graphs while delaying weight gradients,
// with gradient_accumulation_fusion left at its default (false). The default gradient
// accumulation does not write to static memory addresses, which a replayed graph needs; upstream
// Bridge rejects it only at setup. Add gradient_accumulation_fusion<>.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<1>, ov::pp<1>, ov::dp<16>, ov::ep<16>, ov::num_moe_experts<128>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                           ov::distributed_optimizer<>, ov::overlap_moe_expert_parallel_comm<>,
                           ov::delay_wgrad_compute<>, ov::add_bias_linear<false>,
                           ov::cuda_graph_impl<ov::graph_impl::transformer_engine>,
                           ov::cuda_graph_modules<ov::graph_module::attn>, ov::te_version<2, 12, 0>,
#ifdef OVERLAP_CONTROL
                           ov::gradient_accumulation_fusion<>,
#endif
                           ov::gpu<ov::gpu_model::h100>>;
