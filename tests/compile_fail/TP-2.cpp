// EXPECT: [TP-2]
// Userbuffer TP overlap needs sequence parallelism; upstream Bridge silently turns it off.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<4>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
#ifdef OVERLAP_CONTROL
                           ov::sequence_parallel<>,
#endif
                           ov::tp_comm_overlap<>>;
