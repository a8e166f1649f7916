// EXPECT: [L-4]
// 60 experts cannot be split evenly over 8 expert-parallel ranks.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::precision<ov::dtype::bf16>,
#ifdef OVERLAP_CONTROL
                           ov::num_moe_experts<64>
#else
                           ov::num_moe_experts<60>
#endif
                           >;
