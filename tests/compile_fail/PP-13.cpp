// EXPECT: [PP-13]
// Deferring the embedding wgrad fills the pipeline bubble: with pp == 1 there is none.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<4>, ov::gradient_accumulation_fusion<>,
                           ov::defer_embedding_wgrad_compute<>,
#ifdef OVERLAP_CONTROL
                           ov::pp<4>
#else
                           ov::pp<1>
#endif
                           >;
