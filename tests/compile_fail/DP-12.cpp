// EXPECT: [DP-12]
// num_buckets and bucket_size both size the DP buckets; upstream Core rejects setting both.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<8>, ov::distributed_optimizer<>,
                           ov::num_buckets<8>
#ifndef OVERLAP_CONTROL
                           ,
                           ov::bucket_size<40000000>
#endif
                           >;
