// EXPECT: [DP-9]
// Megatron needs overlap_grad_reduce for overlap_param_gather; Bridge lets this through silently.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<8>, ov::distributed_optimizer<>
#ifndef OVERLAP_CONTROL
                           ,
                           ov::overlap_grad_reduce<false>
#endif
                           >;
