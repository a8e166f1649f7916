#pragma once
/// @file
/// `executor_api<Api>`: the CUDA runtime and NCCL calls the executor makes, as a policy of types
/// and static functions. `cuda_api` (in `<overlap/cuda/cuda_api.hpp>`) forwards them to CUDA and
/// NCCL; the tests record them and the host-overhead bench makes them do nothing, so the dispatch
/// core builds and is tested on machines without the toolkit. Host only: no CUDA or NCCL include.
///
/// Each function has the shape of the call it stands for (an out-parameter first for creators,
/// the stream last for enqueued work) and returns that call's status. Reductions are sums: the
/// program model carries no reduction operator.

#include <concepts>
#include <cstddef>

namespace overlap::cuda {

/// True when `Api` provides every type, constant and static function the executor calls.
template <class Api>
concept executor_api = requires(typename Api::stream_t stream, typename Api::stream_t* stream_out,
                                typename Api::event_t event, typename Api::event_t* event_out,
                                typename Api::comm_t comm, typename Api::dtype_t dtype, typename Api::graph_t graph,
                                typename Api::graph_t* graph_out, typename Api::graph_exec_t exec,
                                typename Api::graph_exec_t* exec_out, typename Api::cuda_status_t cuda_status,
                                typename Api::nccl_status_t nccl_status, typename Api::nccl_status_t* nccl_status_out,
                                const void* in, void* out, std::size_t count, int value, int* int_out,
                                float* float_out) {
  // Statuses the executor tells apart: success, "not finished yet" for stream queries, and
  // NCCL's "still being enqueued" for non-blocking communicators.
  { Api::cuda_success } -> std::convertible_to<typename Api::cuda_status_t>;
  { Api::cuda_not_ready } -> std::convertible_to<typename Api::cuda_status_t>;
  { Api::nccl_success } -> std::convertible_to<typename Api::nccl_status_t>;
  { Api::nccl_in_progress } -> std::convertible_to<typename Api::nccl_status_t>;
  { cuda_status == cuda_status } -> std::convertible_to<bool>;
  { nccl_status == nccl_status } -> std::convertible_to<bool>;
  // Streams and events (cudaStreamCreateWithPriority with cudaStreamNonBlocking,
  // cudaEventCreateWithFlags with cudaEventDisableTiming).
  { Api::stream_create(stream_out, value) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::stream_destroy(stream) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::stream_query(stream) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::event_create(event_out) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::event_destroy(event) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::event_record(event, stream) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::stream_wait_event(stream, event) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::event_query(event) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::get_last_error() } -> std::same_as<typename Api::cuda_status_t>;
  // The timing mode: events with timing on (cudaEventCreateWithFlags with cudaEventDefault), and
  // the milliseconds between two completed records (cudaEventElapsedTime).
  { Api::timing_event_create(event_out) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::event_elapsed_ms(float_out, event, event) } -> std::same_as<typename Api::cuda_status_t>;
  // Graphs: capture (relaxed mode) on one stream, instantiate, launch.
  { Api::begin_capture(stream) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::end_capture(stream, graph_out) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::graph_instantiate(exec_out, graph) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::graph_launch(exec, stream) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::graph_destroy(graph) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::graph_exec_destroy(exec) } -> std::same_as<typename Api::cuda_status_t>;
  { Api::cuda_error_name(cuda_status) } -> std::convertible_to<const char*>;
  { Api::cuda_error_string(cuda_status) } -> std::convertible_to<const char*>;
  // NCCL: groups, collectives (sum), point-to-point, communicator queries and abort.
  { Api::group_start() } -> std::same_as<typename Api::nccl_status_t>;
  { Api::group_end() } -> std::same_as<typename Api::nccl_status_t>;
  { Api::all_gather(in, out, count, dtype, comm, stream) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::reduce_scatter(in, out, count, dtype, comm, stream) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::all_reduce(in, out, count, dtype, comm, stream) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::send(in, count, dtype, value, comm, stream) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::recv(out, count, dtype, value, comm, stream) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::comm_count(comm, int_out) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::comm_user_rank(comm, int_out) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::comm_get_async_error(comm, nccl_status_out) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::comm_abort(comm) } -> std::same_as<typename Api::nccl_status_t>;
  { Api::nccl_error_name(nccl_status) } -> std::convertible_to<const char*>;
  { Api::nccl_error_string(nccl_status) } -> std::convertible_to<const char*>;
  { Api::nccl_last_error(comm) } -> std::convertible_to<const char*>;
  // Bytes per element of a dtype (0: unknown).
  { Api::element_size(dtype) } -> std::convertible_to<std::size_t>;
};

}  // namespace overlap::cuda
