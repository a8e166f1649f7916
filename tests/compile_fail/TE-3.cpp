// EXPECT: [TE-3]
// Atomic GEMMs exist only for fp8; in bf16 the atomic_gemm knob cannot work.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
  using proj_fprop = ov::ub::pipeline<24, 2, 4, true, false, true>;
};

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
                           ov::tp_comm_overlap<>,
#ifdef OVERLAP_CONTROL
                           ov::fp8<>,
#endif
                           ov::tp_comm_overlap_cfg<my_cfg>>;
