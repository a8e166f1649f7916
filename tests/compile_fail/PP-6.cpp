// EXPECT: [PP-6]
// overlap_p2p_comm needs the interleaved schedule; without vpp the 1F1B schedule cannot use it.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::dp<2>,
#ifdef OVERLAP_CONTROL
                           ov::vpp<2>,
#endif
                           ov::overlap_p2p_comm<>>;
