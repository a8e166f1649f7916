// EXPECT: [FX-3]
// DeepEP on GB200: upstream silently falls back to alltoall (use HybridEP there).
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::gpu<ov::gpu_model::gb200>, ov::moe_token_dispatcher_type<ov::dispatcher::flex>,
#ifdef OVERLAP_CONTROL
                           ov::moe_flex_dispatcher_backend<ov::flex_backend::hybridep>
#else
                           ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>
#endif
                           >;
