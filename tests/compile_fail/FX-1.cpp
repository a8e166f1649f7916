// EXPECT: [FX-1]
// flex dispatcher and DeepEP on a dense model: upstream warns and skips it.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::dp<8>, ov::precision<ov::dtype::bf16>,
#ifdef OVERLAP_CONTROL
                           ov::num_moe_experts<64>,
#endif
                           ov::moe_token_dispatcher_type<ov::dispatcher::flex>,
                           ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>>;
