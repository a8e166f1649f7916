// On a GPU: a one-rank NCCL program (ncclCommInitAll on device 0) through the real executor,
// eagerly and as a replayed CUDA graph, with its numbers checked after each step. The program
// and its resources come from gpu_programs.hpp, which test_gpu_programs.cpp also runs through
// the recording stand-in on every CI machine. Without a GPU it says so and exits 77, which ctest
// reports as skipped.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/cuda.hpp>

#include "gpu_programs.hpp"

namespace sc = overlap::schedule;
namespace oc = overlap::cuda;
using sc::op_type;

namespace {
constexpr int skipped = 77;
constexpr std::size_t elements = gpu_programs::elements;
constexpr std::int64_t bytes = gpu_programs::bytes;

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  failures += ok ? 0 : 1;
}

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
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

int run_steps(ncclComm_t comm) {
  device_array source, grad, reduced, gathered, exchanged, out;
  const gpu_programs::one_rank_memory memory{source.data,   grad.data,      reduced.data,
                                             gathered.data, exchanged.data, out.data};
  const auto copy = [](void* to, const void* from, std::int64_t n, cudaStream_t s) {
    cuda_check(cudaMemcpyAsync(to, from, static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, s), "copy kernel");
  };
  oc::executor exec(gpu_programs::one_rank_program(),
                    gpu_programs::one_rank_resources<oc::cuda_api>(comm, memory, ncclFloat32, copy));

  const auto check_all = [&](float base, const std::string& when) {
    std::vector<float> want(elements);
    for (std::size_t i = 0; i < elements; ++i) want[i] = base + static_cast<float>(i % 1000);
    expect(out.read() == want, when + ": all-reduced gradient copied out by the consumer");
    expect(gathered.read() == want, when + ": all-gather");
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
    oc::executor missing(gpu_programs::one_rank_program(), std::move(empty));
  } catch (const oc::preflight_error& e) {
    rejected = std::string(e.what()).find("no kernel for op type 'fc1_wgrad'") != std::string::npos;
  }
  expect(rejected, "pre-flight rejects missing kernels on the real API");
  return failures == 0 ? 0 : 1;
}

int run_on_gpu() {
  ncclComm_t comm = nullptr;
  const int device = 0;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  if (const ncclResult_t r = ncclCommInitAll(&comm, 1, &device); r != ncclSuccess) {
    std::printf("FAILED: ncclCommInitAll: %s\n", ncclGetErrorString(r));
    return 1;
  }
  const int result = run_steps(comm);  // its executor and arrays go before the communicator
  ncclCommDestroy(comm);
  return result;
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
