// EXPECT: [L-3]
// Expert ranks (ep x etp = 16) must tile the dense ranks (tp x cp x dp = 8).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<4>, ov::etp<1>, ov::num_moe_experts<64>,
#ifdef OVERLAP_CONTROL
                           ov::ep<8>
#else
                           ov::ep<16>
#endif
                           >;
