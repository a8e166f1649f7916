// EXPECT: [PP-10]
// Without vpp p2p is batched (PP-2); warm-up/flush overlap works only with overlap_p2p_comm.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::dp<2>,
#ifdef OVERLAP_CONTROL
                           ov::vpp<2>,
#endif
                           ov::overlap_p2p_comm_warmup_flush<>>;
