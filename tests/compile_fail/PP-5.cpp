// EXPECT: [PP-5]
// vpp turns overlap_p2p_comm on; forcing batch_p2p_comm too asks for two p2p modes at once.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<2>
#ifndef OVERLAP_CONTROL
                           ,
                           ov::batch_p2p_comm<>
#endif
                           >;
