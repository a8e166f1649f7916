// EXPECT: [PP-16]
// With pp == 1 there are no pipeline sends or receives: batch_p2p_comm would do nothing.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<4>, ov::batch_p2p_comm<>,
#ifdef OVERLAP_CONTROL
                           ov::pp<4>
#else
                           ov::pp<1>
#endif
                           >;
