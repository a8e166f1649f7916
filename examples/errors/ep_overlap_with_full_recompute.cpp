// EXPECT: [EP-7]
// Pitfall: keeping full activation recompute from an older recipe and adding EP overlap. The
// combined 1F1B schedule cannot re-run a whole layer; upstream fails only at setup on every rank.
// Selective recompute (without module::moe) is allowed. A recompute_method or
// recompute_num_layers left in the recipe would be reported too (EP-8, EP-9).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<8>, ov::ep<8>, ov::etp<1>,
                           ov::distributed_optimizer<>, ov::num_moe_experts<64>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                           ov::gpu<ov::gpu_model::h100>, ov::overlap_moe_expert_parallel_comm<>,
#ifdef OVERLAP_CONTROL
                           ov::recompute_granularity<ov::granularity::selective>
#else
                           ov::recompute_granularity<ov::granularity::full>
#endif
                           >;
