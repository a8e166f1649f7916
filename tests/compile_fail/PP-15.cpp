// EXPECT: [PP-15]
// A negative deferral limit (upstream Bridge derives -1) is rejected by upstream Core.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::dp<2>, ov::gradient_accumulation_fusion<>,
                           ov::defer_embedding_wgrad_compute<>,
#ifdef OVERLAP_CONTROL
                           ov::wgrad_deferral_limit<0>
#else
                           ov::wgrad_deferral_limit<-1>
#endif
                           >;
