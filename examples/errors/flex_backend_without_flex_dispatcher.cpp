// EXPECT: [FX-11]
// Pitfall: choosing the DeepEP backend without choosing the flex dispatcher. Upstream keeps the
// alltoall dispatcher and silently ignores moe_flex_dispatcher_backend (only ncclep is rejected),
// so the run trains without DeepEP and nobody is told. Setting the backend never changes the
// dispatcher: set moe_token_dispatcher_type<dispatcher::flex> as well.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<8>, ov::ep<8>, ov::etp<1>,
                           ov::distributed_optimizer<>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::gpu<ov::gpu_model::h100>, ov::overlap_moe_expert_parallel_comm<>,
                           ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>,
#ifdef OVERLAP_CONTROL
                           ov::moe_token_dispatcher_type<ov::dispatcher::flex>
#else
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>
#endif
                           >;
