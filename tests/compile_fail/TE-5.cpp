// EXPECT: [TE-5]
// TE asserts both members of an AG/RS pair use the same atomic ring-exchange setting.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
  using qkv_fprop = ov::ub::ring_exchange<1, 1, false, false, false, true>;
#ifdef OVERLAP_CONTROL
  using proj_fprop = ov::ub::ring_exchange<1, 1, true, false, false, true>;
#else
  using proj_fprop = ov::ub::ring_exchange<1, 1, true, false, false, false>;
#endif
};

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>, ov::fp8<>,
                           ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<my_cfg>>;
