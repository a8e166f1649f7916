// EXPECT: [TE-7]
// num_sm 0 gives the pipelined split no SMs for its communication kernel.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
#ifdef OVERLAP_CONTROL
  using proj_fprop = ov::ub::pipeline<24, 2, 4, true>;
#else
  using proj_fprop = ov::ub::pipeline<0, 2, 4, true>;
#endif
};

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
                           ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<my_cfg>>;
