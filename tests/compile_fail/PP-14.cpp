// EXPECT: [PP-14]
// Upstream Core cannot defer the embedding wgrad without gradient accumulation fusion.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::pp<4>, ov::dp<2>,
#ifdef OVERLAP_CONTROL
                           ov::gradient_accumulation_fusion<>,
#endif
                           ov::defer_embedding_wgrad_compute<>>;
