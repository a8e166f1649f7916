// A small data-parallel model step on every visible GPU, run by overlap::cuda::executor: cuBLAS
// GEMMs as the forward and backward of each layer, and each layer's gradient all-reduced with
// NCCL on a communication stream while the backward of the layers below it runs. One rank per
// GPU, communicators from ncclCommInitAll in this one process, one host thread per GPU.
//
// It checks its numbers (every rank's reduced gradient equals the sum over ranks) and prints the
// overlapped and serialized step times, plus compute alone and communication alone, as one JSON
// line. Without a GPU it prints "not run: no GPU (...)" and exits 0.
//
// Sizes: OVERLAP_HIDDEN (default 2048), OVERLAP_LAYERS (8), OVERLAP_ITERATIONS (10),
// OVERLAP_COMM_REPEAT (1: gradient all-reduces per layer; raise it to balance communication
// against compute on machines where the all-reduce is fast, e.g. one GPU).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cublas_v2.h>

#include <overlap/cuda.hpp>

namespace sc = overlap::schedule;
namespace oc = overlap::cuda;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
void cublas_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

struct sizes {
  int hidden, layers, iterations, comm_repeat;
};

enum class variant { overlapped, serialized, compute_only, comm_only };

/// The step of rank `rank` of `ranks`: forward GEMMs, then per layer from the top its backward
/// GEMM (the weight gradient) and that gradient's all-reduce; overlapped, the all-reduce runs on
/// the communication stream after an event, serialized on the compute stream.
sc::program step_program(int rank, int ranks, const sizes& z, variant v) {
  sc::program p;
  p.rank = rank;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}};
  std::vector<int> all(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) all[static_cast<std::size_t>(r)] = r;
  p.comms = {{"dp", all}};
  const bool compute = v != variant::comm_only, comm = v != variant::compute_only;
  const int comm_stream = v == variant::serialized ? 0 : 1;
  const std::int64_t grad_bytes = std::int64_t{z.hidden} * z.hidden * 4;
  const auto name = [](const char* what, int l) { return std::string(what) + std::to_string(l); };
  if (compute)
    for (int l = 0; l < z.layers; ++l) p.ops.push_back({.kind = sc::op_kind::compute, .stream = 0, .name = name("fwd_l", l)});
  for (int l = z.layers - 1; l >= 0; --l) {
    if (compute) p.ops.push_back({.kind = sc::op_kind::compute, .stream = 0, .name = name("bwd_l", l)});
    if (!comm) continue;
    if (compute && comm_stream == 1) {
      p.ops.push_back({.kind = sc::op_kind::record, .stream = 0, .event = p.num_events});
      p.ops.push_back({.kind = sc::op_kind::wait, .stream = 1, .event = p.num_events++});
    }
    for (int k = 0; k < z.comm_repeat; ++k)
      p.ops.push_back({.kind = sc::op_kind::collective, .stream = comm_stream, .name = name("grad_l", l),
                       .coll = sc::collective::all_reduce, .comm = 0, .bytes = grad_bytes});
  }
  if (compute && comm && comm_stream == 1) {  // the optimizer would wait for the last reduction
    p.ops.push_back({.kind = sc::op_kind::record, .stream = 1, .event = p.num_events});
    p.ops.push_back({.kind = sc::op_kind::wait, .stream = 0, .event = p.num_events++});
  }
  return p;
}

/// One GPU's model: per layer an input X (rank + 1 everywhere), an output gradient dY (ones), a
/// weight, an activation and the weight gradient dW = X^T dY.
struct rank_model {
  int device = 0;
  cublasHandle_t blas = nullptr;
  std::vector<float*> x, dy, w, y, dw;
  std::size_t elements = 0;

  rank_model(int dev, int rank, const sizes& z) : device(dev), elements(std::size_t(z.hidden) * z.hidden) {
    cuda_ok(cudaSetDevice(device), "cudaSetDevice");
    cublas_ok(cublasCreate(&blas), "cublasCreate");
    std::vector<float> value(elements);
    const auto make = [&](float v) {
      float* d = nullptr;
      cuda_ok(cudaMalloc(&d, elements * sizeof(float)), "cudaMalloc");
      std::fill(value.begin(), value.end(), v);
      cuda_ok(cudaMemcpy(d, value.data(), elements * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
      return d;
    };
    for (int l = 0; l < z.layers; ++l) {
      x.push_back(make(static_cast<float>(rank + 1)));
      dy.push_back(make(1.0f));
      w.push_back(make(1.0f / static_cast<float>(z.hidden)));
      y.push_back(make(0.0f));
      dw.push_back(make(0.0f));
    }
  }
  ~rank_model() {
    cudaSetDevice(device);
    for (auto* v : {&x, &dy, &w, &y, &dw})
      for (float* d : *v) cudaFree(d);
    cublasDestroy(blas);
  }
  rank_model(const rank_model&) = delete;
  rank_model& operator=(const rank_model&) = delete;

  oc::resources resources(ncclComm_t comm, int hidden) {
    oc::resources r;
    r.comms["dp"] = comm;
    const float one = 1.0f, zero = 0.0f;
    for (std::size_t l = 0; l < x.size(); ++l) {
      r.kernels["fwd_l" + std::to_string(l)] = [this, l, hidden, one, zero](cudaStream_t s) {
        cublas_ok(cublasSetStream(blas, s), "cublasSetStream");
        cublas_ok(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, hidden, hidden, hidden, &one, x[l], hidden, w[l],
                              hidden, &zero, y[l], hidden), "cublasSgemm (forward)");
      };
      r.kernels["bwd_l" + std::to_string(l)] = [this, l, hidden, one, zero](cudaStream_t s) {
        cublas_ok(cublasSetStream(blas, s), "cublasSetStream");
        cublas_ok(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, hidden, hidden, hidden, &one, dy[l], hidden, x[l],
                              hidden, &zero, dw[l], hidden), "cublasSgemm (weight gradient)");
      };
      const std::int64_t bytes = std::int64_t(elements * sizeof(float));
      r.buffers["grad_l" + std::to_string(l)] = {dw[l], bytes, dw[l], bytes, ncclFloat32};
    }
    return r;
  }
};

/// Runs `iterations` steps of one variant on every rank, one thread per GPU; returns ms per step.
double time_variant(std::vector<std::unique_ptr<rank_model>>& models, std::vector<ncclComm_t>& comms,
                    const sizes& z, variant v) {
  const int n = static_cast<int>(models.size());
  std::vector<std::unique_ptr<oc::executor>> execs(static_cast<std::size_t>(n));
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  const auto on_every_rank = [&](const std::function<void(int)>& body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          cuda_ok(cudaSetDevice(models[static_cast<std::size_t>(r)]->device), "cudaSetDevice");
          body(r);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    for (std::thread& t : threads) t.join();
    for (const std::string& e : errors)
      if (!e.empty()) throw std::runtime_error(e);
  };
  on_every_rank([&](int r) {
    const auto& m = models[static_cast<std::size_t>(r)];
    execs[static_cast<std::size_t>(r)] = std::make_unique<oc::executor>(
        step_program(r, n, z, v), m->resources(comms[static_cast<std::size_t>(r)], z.hidden));
    execs[static_cast<std::size_t>(r)]->run();  // warm-up (cuBLAS and NCCL set-up)
    execs[static_cast<std::size_t>(r)]->wait();
  });
  const auto start = std::chrono::steady_clock::now();
  on_every_rank([&](int r) {
    for (int i = 0; i < z.iterations; ++i) execs[static_cast<std::size_t>(r)]->run();
    execs[static_cast<std::size_t>(r)]->wait();
  });
  const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
  return took.count() / z.iterations;
}

/// Every rank's reduced gradients equal hidden x (1 + 2 + ... + n) everywhere.
bool gradients_correct(std::vector<std::unique_ptr<rank_model>>& models, const sizes& z, int repeat) {
  const int n = static_cast<int>(models.size());
  // comm_repeat all-reduces of the same buffer multiply the sum by n for each extra one.
  double want = double(z.hidden) * n * (n + 1) / 2;
  for (int k = 1; k < repeat; ++k) want *= n;
  std::vector<float> host(models[0]->elements);
  for (auto& m : models) {
    cuda_ok(cudaSetDevice(m->device), "cudaSetDevice");
    for (float* d : m->dw) {
      cuda_ok(cudaMemcpy(host.data(), d, host.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (float v : host)
        if (static_cast<double>(v) != want) {
          std::printf("wrong gradient on device %d: %g, want %g\n", m->device, static_cast<double>(v), want);
          return false;
        }
    }
  }
  return true;
}

}  // namespace

int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("not run: no GPU (%s: %s)\n", cudaGetErrorName(e),
                e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device is visible");
    return 0;
  }
  const sizes z{env_int("OVERLAP_HIDDEN", 2048), env_int("OVERLAP_LAYERS", 8), env_int("OVERLAP_ITERATIONS", 10),
                env_int("OVERLAP_COMM_REPEAT", 1)};
  try {
    std::vector<int> list(static_cast<std::size_t>(devices));
    for (int d = 0; d < devices; ++d) list[static_cast<std::size_t>(d)] = d;
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(devices));
    if (const ncclResult_t r = ncclCommInitAll(comms.data(), devices, list.data()); r != ncclSuccess)
      throw std::runtime_error(std::string("ncclCommInitAll: ") + ncclGetErrorString(r));
    std::vector<std::unique_ptr<rank_model>> models;
    for (int d = 0; d < devices; ++d) models.push_back(std::make_unique<rank_model>(d, d, z));

    const double comm_ms = time_variant(models, comms, z, variant::comm_only);
    const double compute_ms = time_variant(models, comms, z, variant::compute_only);
    const double serialized_ms = time_variant(models, comms, z, variant::serialized);
    const bool serialized_ok = gradients_correct(models, z, z.comm_repeat);
    const double overlapped_ms = time_variant(models, comms, z, variant::overlapped);
    const bool overlapped_ok = gradients_correct(models, z, z.comm_repeat);
    for (ncclComm_t c : comms) ncclCommDestroy(c);

    std::printf("%d GPU(s), hidden %d, %d layers: gradients %s (serialized) and %s (overlapped)\n", devices,
                z.hidden, z.layers, serialized_ok ? "correct" : "WRONG", overlapped_ok ? "correct" : "WRONG");
    std::printf("step: overlapped %.3f ms, serialized %.3f ms (compute alone %.3f ms, communication alone %.3f ms)\n",
                overlapped_ms, serialized_ms, compute_ms, comm_ms);
    const double parts = compute_ms > comm_ms ? compute_ms : comm_ms;
    std::printf("{\"gpus\": %d, \"hidden\": %d, \"layers\": %d, \"comm_repeat\": %d, \"overlapped_ms\": %.4f, "
                "\"serialized_ms\": %.4f, \"compute_ms\": %.4f, \"comm_ms\": %.4f, \"max_of_parts_ms\": %.4f, "
                "\"overlapped_over_serialized\": %.4f, \"overlapped_over_max_of_parts\": %.4f, \"numerics_ok\": %s}\n",
                devices, z.hidden, z.layers, z.comm_repeat, overlapped_ms, serialized_ms, compute_ms, comm_ms, parts,
                overlapped_ms / serialized_ms, overlapped_ms / parts, serialized_ok && overlapped_ok ? "true" : "false");
    return serialized_ok && overlapped_ok ? 0 : 1;
  } catch (const std::exception& ex) {
    std::printf("FAILED: %s\n", ex.what());
    return 1;
  }
}
