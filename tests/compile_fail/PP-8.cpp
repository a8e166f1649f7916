// EXPECT: [PP-8]
// vpp on two stages without overlap_p2p_comm runs several p2p batches between the same two ranks.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<2>, ov::vpp<2>, ov::dp<4>
#ifndef OVERLAP_CONTROL
                           ,
                           ov::overlap_p2p_comm<false>
#endif
                           >;
