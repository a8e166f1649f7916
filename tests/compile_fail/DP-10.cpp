// EXPECT: [DP-10]
// Param gather overlapped with the optimizer step is not supported with distributed checkpointing.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<8>,
                           ov::distributed_optimizer<>, ov::overlap_param_gather_with_optimizer_step<>
#ifndef OVERLAP_CONTROL
                           ,
                           ov::use_dist_ckpt<>
#endif
                           >;
