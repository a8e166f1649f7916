// EXPECT: [DP-21]
// With dp x cp == 1 there is no gradient reduction to overlap.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<8>, ov::sequence_parallel<>, ov::overlap_grad_reduce<>,
#ifdef OVERLAP_CONTROL
                           ov::dp<2>
#else
                           ov::dp<1>
#endif
                           >;
