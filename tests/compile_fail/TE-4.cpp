// EXPECT: [TE-4]
// Bulk overlap runs no split GEMM, so atomic_gemm there is silently ignored upstream.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
#ifdef OVERLAP_CONTROL
  using qkv_dgrad = ov::ub::bulk<4, 2, false, false>;
#else
  using qkv_dgrad = ov::ub::bulk<4, 2, false, true>;
#endif
};

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
                           ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<my_cfg>>;
