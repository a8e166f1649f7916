// EXPECT: [TE-1]
// qkv_fprop all-gathers its input: the pipelined split only exists for reduce-scatter slots.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
#ifdef OVERLAP_CONTROL
  using qkv_fprop = ov::ub::ring_exchange<>;
#else
  using qkv_fprop = ov::ub::pipeline<>;
#endif
};

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
                           ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<my_cfg>>;
