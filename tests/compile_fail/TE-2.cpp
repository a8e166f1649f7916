// EXPECT: [TE-2]
// A non-bulk fc1_dgrad takes fc1_wgrad's place (reduce-scatter); TE asserts fc1_wgrad is absent.
#include <overlap/overlap.hpp>
namespace ov = overlap;

struct my_cfg {
  using fc1_dgrad = ov::ub::pipeline<16, 2, 4, true>;
#ifndef OVERLAP_CONTROL
  using fc1_wgrad = ov::ub::bulk<4, 2>;
#endif
};

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
                           ov::tp_comm_overlap<>, ov::tp_comm_overlap_cfg<my_cfg>>;
