// EXPECT: [TP-2]
// Pitfall: asking for TP communication overlap without sequence parallelism. The userbuffer
// overlap splits the sequence-parallel all-gather / reduce-scatter around the GEMMs; without
// sequence_parallel there is nothing to split, and Megatron-Bridge logs a warning and silently
// turns tp_comm_overlap off, so the run is slower than the recipe promised.
// Add sequence_parallel<>.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<4>,
#ifdef OVERLAP_CONTROL
                           ov::sequence_parallel<>,
#endif
                           ov::tp_comm_overlap<>, ov::pp<4>, ov::vpp<5>, ov::dp<4>, ov::distributed_optimizer<>,
                           ov::precision<ov::dtype::bf16>, ov::gpu<ov::gpu_model::h100>>;
