// EXPECT: [L-2]
// Virtual pipeline stages need a pipeline: vpp with pp == 1 means nothing.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::vpp<2>, ov::dp<4>,
#ifdef OVERLAP_CONTROL
                           ov::pp<4>
#else
                           ov::pp<1>
#endif
                           >;
