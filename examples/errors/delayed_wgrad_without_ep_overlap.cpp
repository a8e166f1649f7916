// EXPECT: [WG-6]
// Pitfall: turning on delay_wgrad_compute alone. Delayed expert weight gradients are computed
// under the backward dispatch of the EP-overlap schedule, so they need
// overlap_moe_expert_parallel_comm. Upstream Bridge checks the value before it overwrites the model
// (a flag set only on the model passes, is then reset to false, and Core fails late at finalize).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<1>, ov::pp<1>, ov::dp<16>, ov::ep<16>, ov::num_moe_experts<128>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                           ov::distributed_optimizer<>, ov::te_version<2, 8, 0>, ov::gpu<ov::gpu_model::h100>,
#ifdef OVERLAP_CONTROL
                           ov::overlap_moe_expert_parallel_comm<>,
#endif
                           ov::delay_wgrad_compute<>>;
