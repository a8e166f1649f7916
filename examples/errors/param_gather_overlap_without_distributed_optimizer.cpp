// EXPECT: [DP-8]
// Pitfall: asking for DP grad-reduce and param-gather overlap without the distributed optimizer.
// Parameters are only all-gathered when the optimizer state is sharded. Megatron-Bridge applies
// its DP settings only with the distributed optimizer, so both flags are silently dropped;
// Megatron-LM rejects the combination. Add distributed_optimizer<>.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<5>, ov::dp<4>,
                           ov::precision<ov::dtype::bf16>, ov::gpu<ov::gpu_model::h100>, ov::overlap_grad_reduce<>,
#ifdef OVERLAP_CONTROL
                           ov::distributed_optimizer<>,
#endif
                           ov::overlap_param_gather<>>;
