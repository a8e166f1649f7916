// The null CUDA/NCCL calls, out of line (see null_api.hpp). Handles are distinct fake pointers.
#include "null_api.hpp"

#include <cstdint>

namespace bench {
namespace {
std::uintptr_t next_handle = 0x1000;
void* fresh() { return reinterpret_cast<void*>(next_handle += 0x10); }
}  // namespace

int null_api::stream_create(void** s, int) { return *s = fresh(), 0; }
int null_api::stream_destroy(void*) { return 0; }
int null_api::stream_query(void*) { return 0; }
int null_api::event_create(void** e) { return *e = fresh(), 0; }
int null_api::timing_event_create(void** e) { return *e = fresh(), 0; }
int null_api::event_elapsed_ms(float* ms, void*, void*) { return *ms = 0, 0; }
int null_api::event_destroy(void*) { return 0; }
int null_api::event_record(void*, void*) { return 0; }
int null_api::stream_wait_event(void*, void*) { return 0; }
int null_api::event_query(void*) { return 0; }
int null_api::get_last_error() { return 0; }
int null_api::begin_capture(void*) { return 0; }
int null_api::end_capture(void*, void** g) { return *g = fresh(), 0; }
int null_api::graph_instantiate(void** exec, void*) { return *exec = fresh(), 0; }
int null_api::graph_launch(void*, void*) { return 0; }
int null_api::graph_destroy(void*) { return 0; }
int null_api::graph_exec_destroy(void*) { return 0; }
const char* null_api::cuda_error_name(int) { return "cudaErrorUnknown"; }
const char* null_api::cuda_error_string(int) { return "null backend"; }
int null_api::group_start() { return 0; }
int null_api::group_end() { return 0; }
int null_api::all_gather(const void*, void*, std::size_t, int, comm_shape*, void*) { return 0; }
int null_api::reduce_scatter(const void*, void*, std::size_t, int, comm_shape*, void*) { return 0; }
int null_api::all_reduce(const void*, void*, std::size_t, int, comm_shape*, void*) { return 0; }
int null_api::send(const void*, std::size_t, int, int, comm_shape*, void*) { return 0; }
int null_api::recv(void*, std::size_t, int, int, comm_shape*, void*) { return 0; }
int null_api::comm_count(comm_shape* c, int* n) { return *n = c->size, 0; }
int null_api::comm_user_rank(comm_shape* c, int* r) { return *r = c->rank, 0; }
int null_api::comm_get_async_error(comm_shape*, int* e) { return *e = 0, 0; }
int null_api::comm_abort(comm_shape*) { return 0; }
const char* null_api::nccl_error_name(int) { return "ncclInternalError"; }
const char* null_api::nccl_error_string(int) { return "null backend"; }
const char* null_api::nccl_last_error(comm_shape*) { return ""; }
std::size_t null_api::element_size(int dtype) { return static_cast<std::size_t>(dtype); }

void null_kernel(void*) {}

}  // namespace bench
