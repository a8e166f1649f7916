// nvcc compiles the executor's header, with every member of the real executor instantiated.
#include <overlap/cuda.hpp>

template class overlap::cuda::basic_executor<overlap::cuda::cuda_api>;
template class overlap::cuda::basic_watchdog<overlap::cuda::cuda_api>;
