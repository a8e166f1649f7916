// EXPECT: [DP-8]
// Parameter all-gather overlap only exists with sharded (distributed-optimizer) parameters.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<8>, ov::overlap_grad_reduce<>,
                           ov::overlap_param_gather<>
#ifdef OVERLAP_CONTROL
                           ,
                           ov::distributed_optimizer<>
#endif
                           >;
