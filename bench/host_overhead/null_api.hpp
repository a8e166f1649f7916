#pragma once
// A CUDA/NCCL stand-in that does nothing: the calls have the executor_api shapes and are defined
// in null_api.cpp, out of line, so callgrind counts the same call sequence for the executor and
// for the hand-written step, and neither can be folded away by the optimizer.
#include <cstddef>

#include <overlap/cuda/api.hpp>

namespace bench {

/// What a null communicator reports: its size and this process's rank in it.
struct comm_shape {
  int size = 1;
  int rank = 0;
};

struct null_api {
  using stream_t = void*;
  using event_t = void*;
  using comm_t = comm_shape*;
  using dtype_t = int;
  using graph_t = void*;
  using graph_exec_t = void*;
  using cuda_status_t = int;
  using nccl_status_t = int;
  static constexpr int cuda_success = 0;
  static constexpr int cuda_not_ready = 600;
  static constexpr int nccl_success = 0;
  static constexpr int nccl_in_progress = 7;

  static int stream_create(void** s, int priority);
  static int stream_destroy(void* s);
  static int stream_query(void* s);
  static int event_create(void** e);
  static int timing_event_create(void** e);
  static int event_elapsed_ms(float* ms, void* start, void* end);
  static int event_destroy(void* e);
  static int event_record(void* e, void* s);
  static int stream_wait_event(void* s, void* e);
  static int event_query(void* e);
  static int get_last_error();
  static int begin_capture(void* s);
  static int end_capture(void* s, void** g);
  static int graph_instantiate(void** exec, void* g);
  static int graph_launch(void* exec, void* s);
  static int graph_destroy(void* g);
  static int graph_exec_destroy(void* exec);
  static const char* cuda_error_name(int e);
  static const char* cuda_error_string(int e);
  static int group_start();
  static int group_end();
  static int all_gather(const void* in, void* out, std::size_t count, int dtype, comm_shape* comm, void* s);
  static int reduce_scatter(const void* in, void* out, std::size_t count, int dtype, comm_shape* comm, void* s);
  static int all_reduce(const void* in, void* out, std::size_t count, int dtype, comm_shape* comm, void* s);
  static int send(const void* in, std::size_t count, int dtype, int peer, comm_shape* comm, void* s);
  static int recv(void* out, std::size_t count, int dtype, int peer, comm_shape* comm, void* s);
  static int comm_count(comm_shape* comm, int* n);
  static int comm_user_rank(comm_shape* comm, int* r);
  static int comm_get_async_error(comm_shape* comm, int* e);
  static int comm_abort(comm_shape* comm);
  static const char* nccl_error_name(int e);
  static const char* nccl_error_string(int e);
  static const char* nccl_last_error(comm_shape* comm);
  static std::size_t element_size(int dtype);
};

/// A compute kernel that launches nothing.
void null_kernel(void* stream);

static_assert(overlap::cuda::executor_api<null_api>);

}  // namespace bench
