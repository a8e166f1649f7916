// EXPECT: [FX-7]
// flex dispatcher without a backend: upstream silently falls back to alltoall.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
#ifdef OVERLAP_CONTROL
                           ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>,
#endif
                           ov::moe_token_dispatcher_type<ov::dispatcher::flex>>;
