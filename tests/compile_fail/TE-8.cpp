// EXPECT: [TE-8]
// 2^30 splits would emit a billion GEMMs and reduce-scatters per layer and micro-batch.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
#ifdef OVERLAP_CONTROL
  using proj_fprop = ov::ub::pipeline<24, 2, 64, true>;
#else
  using proj_fprop = ov::ub::pipeline<24, 2, (1 << 30), true>;
#endif
};

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
                           ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<my_cfg>>;
