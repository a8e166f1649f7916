// EXPECT: [MP-1]
// FP8 parameter gather without FP8 GEMMs.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<4>, ov::precision<ov::dtype::bf16>,
                           ov::fp8_param_gather<>
#ifdef OVERLAP_CONTROL
                           ,
                           ov::fp8<>
#endif
                           >;
