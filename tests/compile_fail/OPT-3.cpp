// EXPECT: [OPT-3]
// vpp<1> is not "one virtual stage": leave vpp out for no interleaving.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::dp<2>,
#ifdef OVERLAP_CONTROL
                           ov::vpp<2>
#else
                           ov::vpp<1>
#endif
                           >;
