// EXPECT: [ENV-1]
// TP on Hopper needs CUDA_DEVICE_MAX_CONNECTIONS=1 so TP comm kernels keep their order.
#include <overlap/overlap.hpp>
namespace ov = overlap;

template struct ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::dp<4>, ov::precision<ov::dtype::bf16>,
                           ov::gpu<ov::gpu_model::h100>,
#ifdef OVERLAP_CONTROL
                           ov::cuda_device_max_connections<1>
#else
                           ov::cuda_device_max_connections<8>
#endif
                           >;
