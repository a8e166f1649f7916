// EXPECT: [OPT-2]
// A type that is not an option would otherwise be silently ignored.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<4>
#ifndef OVERLAP_CONTROL
                           ,
                           int
#endif
                           >;
