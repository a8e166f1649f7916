// EXPECT: [TP-9]
// Sequence parallelism splits activations over the TP group: meaningless with tp == 1.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::sequence_parallel<>, ov::dp<8>,
#ifdef OVERLAP_CONTROL
                           ov::tp<2>
#else
                           ov::tp<1>
#endif
                           >;
