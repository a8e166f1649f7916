// EXPECT: [FX-11]
// a flex backend alone does nothing: the dispatcher must also be flex.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                           ov::moe_flex_dispatcher_backend<ov::flex_backend::deepep>,
#ifdef OVERLAP_CONTROL
                           ov::moe_token_dispatcher_type<ov::dispatcher::flex>
#else
                           ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>
#endif
                           >;
