// EXPECT: [EP-6]
// Pitfall: EP all-to-all overlap on a plain 1F1B pipeline. The combined 1F1B schedule that hides
// the all-to-all needs the interleaved (virtual-pipeline) schedule when pp > 1; upstream only
// fails at setup, and its check lets vpp = 1 through although Bridge then runs the
// non-interleaved schedule. Set vpp<N> with N >= 2.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>,
#ifdef OVERLAP_CONTROL
                           ov::vpp<2>,
#endif
                           ov::dp<8>, ov::ep<8>, ov::etp<1>, ov::distributed_optimizer<>, ov::num_moe_experts<64>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                           ov::gpu<ov::gpu_model::h100>, ov::overlap_moe_expert_parallel_comm<>>;
