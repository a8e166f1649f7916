// EXPECT: [FX-10]
// DeepEP cannot pad expert inputs to capacity.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_token_dispatcher_type<ov::dispatcher::flex>,
#ifndef OVERLAP_CONTROL
                           ov::moe_pad_expert_input_to_capacity<>,
#endif
                           ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>>;
