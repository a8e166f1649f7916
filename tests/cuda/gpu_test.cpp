// On a GPU: a one-rank NCCL program (ncclCommInitAll on device 0) through the real executor,
// eagerly and as a replayed CUDA graph, with its numbers checked after each step. Without a GPU
// it says so and exits 77, which ctest reports as skipped.
#include <cstdio>
#include <string>
#include <vector>

#include <overlap/cuda.hpp>

namespace sc = overlap::schedule;
namespace oc = overlap::cuda;
using K = sc::op_kind;
using sc::op_type;

namespace {
constexpr int skipped = 77;
constexpr std::size_t elements = 1 << 16;
constexpr std::int64_t bytes = elements * sizeof(float);

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  failures += ok ? 0 : 1;
}

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

struct device_array {
  float* data = nullptr;
  device_array() { cuda_check(cudaMalloc(&data, bytes), "cudaMalloc"); }
  ~device_array() { cudaFree(data); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  std::vector<float> read() const {
    std::vector<float> host(elements);
    cuda_check(cudaMemcpy(host.data(), data, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return host;
  }
  void write(float base) {
    std::vector<float> host(elements);
    for (std::size_t i = 0; i < elements; ++i) host[i] = base + static_cast<float>(i % 1000);
    cuda_check(cudaMemcpy(data, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
};

/// produce (a weight gradient: copy the source into the gradient) -> all-reduce, all-gather, a self
/// send/recv group, an all-to-all on the communication stream -> consume (the optimizer step:
/// copy the reduced gradient out).
sc::program one_rank_program() {
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}};
  p.comms = {{"solo", {0}}};
  p.num_events = 2;
  p.ops = {
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc1_wgrad, .at = {.layer = 0}}},
      {.kind = K::record, .stream = 0, .event = 0},
      {.kind = K::wait, .stream = 1, .event = 0},
      {.kind = K::collective, .stream = 1, .key = {.type = op_type::dp_grad_reduce, .at = {.bucket = 0}},
       .coll = sc::collective::all_reduce, .comm = 0, .bytes = bytes},
      {.kind = K::collective, .stream = 1, .key = {.type = op_type::dp_param_gather, .at = {.bucket = 0}},
       .coll = sc::collective::all_gather, .comm = 0, .bytes = bytes},
      {.kind = K::send, .stream = 1, .key = {.type = op_type::pp_send_forward}, .comm = 0, .peer = 0, .bytes = bytes, .group = 0},
      {.kind = K::recv, .stream = 1, .key = {.type = op_type::pp_recv_forward}, .comm = 0, .peer = 0, .bytes = bytes, .group = 0},
      {.kind = K::collective, .stream = 1, .key = {.type = op_type::ep_dispatch, .at = {.layer = 0}},
       .coll = sc::collective::all_to_all, .comm = 0, .bytes = bytes},
      {.kind = K::record, .stream = 1, .event = 1},
      {.kind = K::wait, .stream = 0, .event = 1},
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::optimizer_step}},
  };
  return p;
}

int run_on_gpu() {
  ncclComm_t comm = nullptr;
  const int device = 0;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  if (const ncclResult_t r = ncclCommInitAll(&comm, 1, &device); r != ncclSuccess) {
    std::printf("FAILED: ncclCommInitAll: %s\n", ncclGetErrorString(r));
    return 1;
  }
  device_array source, grad, reduced, gathered, echoed, exchanged, out;
  oc::resources r;
  r.comms["solo"] = comm;
  r.kernels[op_type::fc1_wgrad] = [&](const sc::op_key&, cudaStream_t s) {
    cuda_check(cudaMemcpyAsync(grad.data, source.data, bytes, cudaMemcpyDeviceToDevice, s), "produce");
  };
  r.kernels[op_type::optimizer_step] = [&](const sc::op_key&, cudaStream_t s) {
    cuda_check(cudaMemcpyAsync(out.data, reduced.data, bytes, cudaMemcpyDeviceToDevice, s), "consume");
  };
  r.buffers = [&](const sc::op& o) -> oc::buffer {
    switch (o.key.type) {
      case op_type::dp_grad_reduce: return {grad.data, bytes, reduced.data, bytes, ncclFloat32};
      case op_type::dp_param_gather: return {grad.data, bytes, gathered.data, bytes, ncclFloat32};
      case op_type::pp_send_forward: return {grad.data, bytes, nullptr, 0, ncclFloat32};
      case op_type::pp_recv_forward: return {nullptr, 0, echoed.data, bytes, ncclFloat32};
      default: return {grad.data, bytes, exchanged.data, bytes, ncclFloat32};
    }
  };
  oc::executor exec(one_rank_program(), std::move(r));

  const auto check_all = [&](float base, const std::string& when) {
    std::vector<float> want(elements);
    for (std::size_t i = 0; i < elements; ++i) want[i] = base + static_cast<float>(i % 1000);
    expect(out.read() == want, when + ": all-reduced gradient copied out by the consumer");
    expect(gathered.read() == want, when + ": all-gather");
    expect(echoed.read() == want, when + ": grouped send/recv");
    expect(exchanged.read() == want, when + ": all-to-all");
  };
  source.write(1.0f);
  exec.run();
  exec.wait();
  check_all(1.0f, "eager step");

  source.write(5000.0f);
  exec.capture();
  exec.replay();
  exec.wait();
  check_all(5000.0f, "captured step, first replay");
  source.write(-3.0f);
  exec.replay();
  exec.replay();
  exec.wait();
  check_all(-3.0f, "captured step, replayed twice on new data");

  bool rejected = false;
  try {
    oc::resources empty;
    empty.comms["solo"] = comm;
    oc::executor missing(one_rank_program(), std::move(empty));
  } catch (const oc::preflight_error& e) {
    rejected = std::string(e.what()).find("no kernel for op type 'fc1_wgrad'") != std::string::npos;
  }
  expect(rejected, "pre-flight rejects missing kernels on the real API");
  ncclCommDestroy(comm);
  return failures == 0 ? 0 : 1;
}
}  // namespace

int main() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("not run: no GPU (%s: %s)\n", cudaGetErrorName(e),
                e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device is visible");
    return skipped;
  }
  try {
    return run_on_gpu();
  } catch (const std::exception& ex) {
    std::printf("FAILED: %s\n", ex.what());
    return 1;
  }
}
