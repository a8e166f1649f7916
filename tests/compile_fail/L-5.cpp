// EXPECT: [L-5]
// 65,536 x 65,536 ranks: more than one program per rank can be generated for (and more than an int).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::precision<ov::dtype::bf16>, ov::tp<8>, ov::sequence_parallel<>,
#ifdef OVERLAP_CONTROL
                           ov::dp<16384>
#else
                           ov::dp<65536>, ov::pp<65536>
#endif
                           >;
