// EXPECT: [TP-17]
// A userbuffer preset alone does nothing: tp_comm_overlap itself must be turned on.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::dp<2>, ov::precision<ov::dtype::bf16>,
                           ov::gpu<ov::gpu_model::h100>,
#ifdef OVERLAP_CONTROL
                           ov::tp_comm_overlap<>,
#endif
                           ov::tp_comm_overlap_cfg<ov::ub::userbuffers_bf16_h100_h12288_tp4_mbs1_seqlen2048>>;
