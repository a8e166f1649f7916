// EXPECT: [TP-1]
// With tp == 1 there is no TP communication to overlap; upstream silently turns the flag off.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::precision<ov::dtype::bf16>
#ifndef OVERLAP_CONTROL
                           ,
                           ov::tp_comm_overlap<>
#endif
                           >;
