// EXPECT: [EP-11]
// Pitfall: a DeepSeek-style model with shared experts turning on both shared-expert overlap and
// EP all-to-all overlap. The two schedules exclude each other: upstream raises only at setup on
// every rank after the job has launched, and switching to the flex dispatcher silently turns
// moe_shared_expert_overlap off instead. Keep EP overlap and drop moe_shared_expert_overlap.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<8>, ov::ep<8>, ov::etp<1>,
                           ov::distributed_optimizer<>, ov::num_moe_experts<64>,
                           ov::moe_shared_expert_intermediate_size<2048>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                           ov::gpu<ov::gpu_model::h100>,
#ifndef OVERLAP_CONTROL
                           ov::moe_shared_expert_overlap<>,
#endif
                           ov::overlap_moe_expert_parallel_comm<>>;
