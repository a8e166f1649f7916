// EXPECT: [DP-22]
// Aligning param gathers across virtual chunks needs virtual chunks (vpp).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::dp<8>, ov::distributed_optimizer<>,
#ifdef OVERLAP_CONTROL
                           ov::vpp<2>,
#endif
                           ov::align_param_gather<>>;
