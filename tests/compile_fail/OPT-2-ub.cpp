// EXPECT: [OPT-2]
// A TP userbuffer config whose slot aliases are all misspelled would otherwise be ignored.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
#ifdef OVERLAP_CONTROL
  using proj_fprop = ov::ub::ring_exchange<>;
#else
  using proj_fprops = ov::ub::ring_exchange<>;
#endif
};

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<my_cfg>>;
