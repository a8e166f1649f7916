// EXPECT: [OPT-1]
// tp<> and tensor_model_parallel_size<> are the same field: giving both is ambiguous.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<4>
#ifndef OVERLAP_CONTROL
                           ,
                           ov::tensor_model_parallel_size<2>
#endif
                           >;
