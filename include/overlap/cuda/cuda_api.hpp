#pragma once
/// @file
/// `cuda_api`: the executor's calls (see `executor_api`) forwarded to the CUDA runtime and NCCL.
/// With `<overlap/cuda.hpp>`, the only headers of the library that include CUDA or NCCL; link
/// `overlap::cuda` (CUDA::cudart and NCCL::nccl).

#include <cstddef>

#include <cuda_runtime.h>
#include <nccl.h>

#include <overlap/cuda/api.hpp>

namespace overlap::cuda {

struct cuda_api {
  using stream_t = cudaStream_t;
  using event_t = cudaEvent_t;
  using comm_t = ncclComm_t;
  using dtype_t = ncclDataType_t;
  using graph_t = cudaGraph_t;
  using graph_exec_t = cudaGraphExec_t;
  using cuda_status_t = cudaError_t;
  using nccl_status_t = ncclResult_t;

  static constexpr cudaError_t cuda_success = cudaSuccess;
  static constexpr cudaError_t cuda_not_ready = cudaErrorNotReady;
  static constexpr ncclResult_t nccl_success = ncclSuccess;
  static constexpr ncclResult_t nccl_in_progress = ncclInProgress;

  /// Non-blocking with respect to the legacy default stream, so no other library's work on
  /// stream 0 serializes the program's streams.
  static cudaError_t stream_create(cudaStream_t* s, int priority) {
    return cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, priority);
  }
  static cudaError_t stream_destroy(cudaStream_t s) { return cudaStreamDestroy(s); }
  static cudaError_t stream_query(cudaStream_t s) { return cudaStreamQuery(s); }
  /// Timing off: the program's events only order streams, and timing makes records dearer.
  static cudaError_t event_create(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDisableTiming); }
  /// Timing on: only the timing mode's own events, recorded around the ops it times.
  static cudaError_t timing_event_create(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
  static cudaError_t event_elapsed_ms(float* ms, cudaEvent_t start, cudaEvent_t end) {
    return cudaEventElapsedTime(ms, start, end);
  }
  static cudaError_t event_destroy(cudaEvent_t e) { return cudaEventDestroy(e); }
  static cudaError_t event_record(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s); }
  static cudaError_t stream_wait_event(cudaStream_t s, cudaEvent_t e) { return cudaStreamWaitEvent(s, e, 0); }
  static cudaError_t event_query(cudaEvent_t e) { return cudaEventQuery(e); }
  static cudaError_t get_last_error() { return cudaGetLastError(); }
  /// Relaxed: other threads of the trainer may keep calling the runtime while a step is captured.
  static cudaError_t begin_capture(cudaStream_t s) { return cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed); }
  static cudaError_t end_capture(cudaStream_t s, cudaGraph_t* g) { return cudaStreamEndCapture(s, g); }
  static cudaError_t graph_instantiate(cudaGraphExec_t* exec, cudaGraph_t g) {
    return cudaGraphInstantiate(exec, g, 0);
  }
  static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t s) { return cudaGraphLaunch(exec, s); }
  static cudaError_t graph_destroy(cudaGraph_t g) { return cudaGraphDestroy(g); }
  static cudaError_t graph_exec_destroy(cudaGraphExec_t exec) { return cudaGraphExecDestroy(exec); }
  static const char* cuda_error_name(cudaError_t e) { return cudaGetErrorName(e); }
  static const char* cuda_error_string(cudaError_t e) { return cudaGetErrorString(e); }

  static ncclResult_t group_start() { return ncclGroupStart(); }
  static ncclResult_t group_end() { return ncclGroupEnd(); }
  static ncclResult_t all_gather(const void* in, void* out, std::size_t count, ncclDataType_t t, ncclComm_t c,
                                 cudaStream_t s) {
    return ncclAllGather(in, out, count, t, c, s);
  }
  static ncclResult_t reduce_scatter(const void* in, void* out, std::size_t count, ncclDataType_t t, ncclComm_t c,
                                     cudaStream_t s) {
    return ncclReduceScatter(in, out, count, t, ncclSum, c, s);
  }
  static ncclResult_t all_reduce(const void* in, void* out, std::size_t count, ncclDataType_t t, ncclComm_t c,
                                 cudaStream_t s) {
    return ncclAllReduce(in, out, count, t, ncclSum, c, s);
  }
  static ncclResult_t send(const void* in, std::size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                           cudaStream_t s) {
    return ncclSend(in, count, t, peer, c, s);
  }
  static ncclResult_t recv(void* out, std::size_t count, ncclDataType_t t, int peer, ncclComm_t c, cudaStream_t s) {
    return ncclRecv(out, count, t, peer, c, s);
  }
  static ncclResult_t comm_count(ncclComm_t c, int* n) { return ncclCommCount(c, n); }
  static ncclResult_t comm_user_rank(ncclComm_t c, int* r) { return ncclCommUserRank(c, r); }
  static ncclResult_t comm_get_async_error(ncclComm_t c, ncclResult_t* e) { return ncclCommGetAsyncError(c, e); }
  static ncclResult_t comm_abort(ncclComm_t c) { return ncclCommAbort(c); }
  static const char* nccl_error_name(ncclResult_t e) {
    switch (e) {
      case ncclSuccess: return "ncclSuccess";
      case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
      case ncclSystemError: return "ncclSystemError";
      case ncclInternalError: return "ncclInternalError";
      case ncclInvalidArgument: return "ncclInvalidArgument";
      case ncclInvalidUsage: return "ncclInvalidUsage";
      case ncclRemoteError: return "ncclRemoteError";
      case ncclInProgress: return "ncclInProgress";
      default: return "ncclResult_t (unknown)";
    }
  }
  static const char* nccl_error_string(ncclResult_t e) { return ncclGetErrorString(e); }
  static const char* nccl_last_error(ncclComm_t c) { return ncclGetLastError(c); }

  static std::size_t element_size(ncclDataType_t t) {
    switch (t) {
      case ncclInt8:
      case ncclUint8: return 1;
      case ncclFloat16:
      case ncclBfloat16: return 2;
      case ncclInt32:
      case ncclUint32:
      case ncclFloat32: return 4;
      case ncclInt64:
      case ncclUint64:
      case ncclFloat64: return 8;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
      case ncclFloat8e4m3:
      case ncclFloat8e5m2: return 1;
#endif
      default: return 0;
    }
  }
};

static_assert(executor_api<cuda_api>);

}  // namespace overlap::cuda
