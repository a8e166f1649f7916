// Model steps run by overlap::cuda::executor, kernels bound by op type.
//
// 1. A generated step: `cfg::schedule::generate(workload)` for a one-rank config (tp 1, dp 1),
//    run on GPU 0 eagerly, then captured into a CUDA graph and replayed. Every GEMM type of the
//    program (qkv, proj, fc1, fc2 and the LM head, forward, dgrad and wgrad) is one cuBLAS
//    callable that picks its operands by the key's layer and micro-batch; the other compute
//    types (embedding, norms, attention core, optimizer, ...) are one stand-in callable (a
//    memset), because the point here is the binding, not a transformer. A one-rank program has
//    no collectives of its own; any communication op it does carry goes to NCCL on a one-rank
//    communicator with scratch buffers from the provider. With OVERLAP_MEASURED_COSTS=<path>, the
//    step is also timed (`run_timed`, OVERLAP_ITERATIONS steps, each op's median) and its
//    measured-cost JSON written there, for `sim::measured_cost_model` (the stand-in ops time a
//    memset and 512^3 GEMMs, not the workload's sizes: this calibrates the example, not a model).
// 2. Because of that, NCCL and overlap are exercised by a hand-written data-parallel step on every
//    visible GPU, with the op types the DP generator uses: per layer from the top its weight
//    gradient GEMM and that gradient's all-reduce, on a communication stream while the backward
//    of the layers below runs (overlapped) or on the compute stream (serialized). One rank per
//    GPU, communicators from ncclCommInitAll in this one process, one host thread per GPU.
//
// Both programs and their resources are built in model_step_programs.hpp, for any executor API:
// tests/cuda/test_gpu_programs.cpp runs them through the recording stand-in on every CI machine.
//
// It checks its numbers (each GEMM output of the generated step; every rank's reduced gradient
// equals the sum over ranks) and prints the overlapped and serialized times of step 2, plus
// compute alone and communication alone, as one JSON line. Without a GPU it prints
// "not run: no GPU (...)" and exits 0.
//
// Sizes: OVERLAP_HIDDEN (default 2048), OVERLAP_LAYERS (8), OVERLAP_ITERATIONS (10),
// OVERLAP_COMM_REPEAT (1: gradient all-reduces per layer; raise it to balance communication
// against compute on machines where the all-reduce is fast, e.g. one GPU).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cublas_v2.h>

#include <overlap/cuda.hpp>
#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/cost/measured_cost_writer.hpp>

#include "model_step_programs.hpp"

namespace ov = overlap;
namespace sc = overlap::schedule;
namespace oc = overlap::cuda;
using sc::op_type;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}
void cublas_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

using model_step::sizes;
using model_step::variant;

/// One GPU's model: per layer an input X (rank + 1 everywhere), an output gradient dY (ones), a
/// weight, an activation and the weight gradient dW = X^T dY.
struct rank_model {
  int device = 0;
  cublasHandle_t blas = nullptr;
  std::vector<float*> x, dy, w, y, dw;
  std::size_t elements = 0;

  rank_model(int dev, int rank, const sizes& z) : device(dev), elements(std::size_t(z.hidden_size) * z.hidden_size) {
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
    for (int l = 0; l < z.num_layers; ++l) {
      x.push_back(make(static_cast<float>(rank + 1)));
      dy.push_back(make(1.0f));
      w.push_back(make(1.0f / static_cast<float>(z.hidden_size)));
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
    const float one = 1.0f, zero = 0.0f;
    // One callable per op type; the key's layer picks the layer's matrices.
    const auto forward = [this, hidden, one, zero](const sc::op_key& k, cudaStream_t s) {
      const auto l = static_cast<std::size_t>(k.at.layer);
      cublas_ok(cublasSetStream(blas, s), "cublasSetStream");
      cublas_ok(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, hidden, hidden, hidden, &one, x[l], hidden, w[l], hidden,
                            &zero, y[l], hidden),
                "cublasSgemm (forward)");
    };
    const auto wgrad = [this, hidden, one, zero](const sc::op_key& k, cudaStream_t s) {
      const auto l = static_cast<std::size_t>(k.at.layer);
      cublas_ok(cublasSetStream(blas, s), "cublasSetStream");
      cublas_ok(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, hidden, hidden, hidden, &one, dy[l], hidden, x[l], hidden,
                            &zero, dw[l], hidden),
                "cublasSgemm (weight gradient)");
    };
    return model_step::step_resources<oc::cuda_api>(comm, ncclFloat32, forward, wgrad,
                                                    [this](int l) { return dw[static_cast<std::size_t>(l)]; });
  }
};

/// Runs `iterations` steps of one variant on every rank, one thread per GPU; returns ms per step.
double time_variant(std::vector<std::unique_ptr<rank_model>>& models, std::vector<ncclComm_t>& comms, const sizes& z,
                    variant v) {
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
        model_step::step_program(r, n, z, v), m->resources(comms[static_cast<std::size_t>(r)], z.hidden_size));
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
  double want = double(z.hidden_size) * n * (n + 1) / 2;
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

/// Times `steps` steps of `exec` (each op's median) and writes their measured-cost JSON to `path`.
void write_measured_costs(oc::executor& exec, int steps, const char* path) {
  const oc::step_timing timed = exec.run_timed(steps);
  ov::sim::write_measured_costs(path, exec.program(), timed.us_per_op());
  std::printf("generated step: %zu ops timed (median of %d steps), measured costs written to %s\n", timed.ops.size(),
              timed.steps, path);
}

/// Step 1: the generated step of a one-rank config on the current GPU, eagerly and as a replayed
/// CUDA graph. Each GEMM op computes C[type, layer] = A[layer] B[micro-batch] with every entry
/// of A[l] equal to l + 2 and of B[m] to (m + 2) / n, so after a step C[type, layer] holds
/// (l + 2)(m + 2) for the micro-batch m of the last op of that type and layer. Returns whether
/// both runs left exactly that.
bool generated_step_correct(const sizes& z, ncclComm_t solo) {
  const sc::workload w = model_step::generated_workload(z.num_layers);
  const sc::program p = model_step::generated_config::schedule::generate(w).front();

  constexpr int n = 512;  // the stand-in GEMMs' size; the workload's sizes are the simulator's
  constexpr std::size_t elements = std::size_t{n} * n;
  std::vector<float*> owned;
  const auto filled = [&](float v) {
    std::vector<float> host(elements, v);
    float* d = nullptr;
    cuda_ok(cudaMalloc(&d, elements * sizeof(float)), "cudaMalloc");
    owned.push_back(d);
    cuda_ok(cudaMemcpy(d, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    return d;
  };
  // Index 0 stands for "no layer" (the LM head) and "no micro-batch".
  std::vector<float*> a, b;
  for (int l = -1; l < z.num_layers; ++l) a.push_back(filled(static_cast<float>(l + 2)));
  for (int m = -1; m < w.micro_batches; ++m) b.push_back(filled(static_cast<float>(m + 2) / n));
  cublasHandle_t blas = nullptr;
  cublas_ok(cublasCreate(&blas), "cublasCreate");
  void* stand_in_target = nullptr;
  cuda_ok(cudaMalloc(&stand_in_target, 256), "cudaMalloc");

  std::map<std::pair<op_type, int>, float*> c;  // the GEMM outputs, by type and layer
  const auto gemm = [&](const sc::op_key& k, cudaStream_t s) {
    const float one = 1.0f, zero = 0.0f;
    cublas_ok(cublasSetStream(blas, s), "cublasSetStream");
    cublas_ok(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a[static_cast<std::size_t>(k.at.layer + 1)], n,
                          b[static_cast<std::size_t>(k.at.micro_batch + 1)], n, &zero, c.at({k.type, k.at.layer}), n),
              "cublasSgemm");
  };
  std::map<std::pair<op_type, int>, int> last_micro_batch;
  for (const sc::op& o : p.ops)
    if (o.kind == sc::op_kind::compute && model_step::gemm_types.contains(o.key.type)) {
      const std::pair<op_type, int> slot{o.key.type, o.key.at.layer};
      if (c.count(slot) == 0) c[slot] = filled(0.0f);
      last_micro_batch[slot] = o.key.at.micro_batch;
    }

  std::vector<void*> scratch;
  oc::resources r = model_step::generated_resources<oc::cuda_api>(
      p, solo, ncclUint8, gemm,
      [&](const sc::op_key&, cudaStream_t s) {
        cuda_ok(cudaMemsetAsync(stand_in_target, 0, 256, s), "stand-in kernel");
      },
      [&](std::int64_t bytes) {
        void* d = nullptr;
        cuda_ok(cudaMalloc(&d, static_cast<std::size_t>(bytes)), "cudaMalloc");
        scratch.push_back(d);
        return d;
      });

  const auto correct = [&](const char* when) {
    std::vector<float> host(elements);
    for (const auto& [slot, out] : c) {
      cuda_ok(cudaMemcpy(host.data(), out, elements * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
      const float want = static_cast<float>((slot.second + 2) * (last_micro_batch.at(slot) + 2));
      if (!std::all_of(host.begin(), host.end(), [&](float v) { return v == want; })) {
        std::printf("generated step (%s): %s of layer %d is %g, want %g\n", when,
                    std::string(sc::to_string(slot.first)).c_str(), slot.second, static_cast<double>(host[0]),
                    static_cast<double>(want));
        return false;
      }
    }
    return true;
  };
  const auto clear = [&] {
    for (const auto& [slot, out] : c) cuda_ok(cudaMemset(out, 0, elements * sizeof(float)), "cudaMemset");
  };
  bool ok = false;
  {
    oc::executor exec(p, std::move(r));
    clear();
    exec.run();
    exec.wait();
    const bool eager = correct("eager");
    if (const char* path = std::getenv("OVERLAP_MEASURED_COSTS"); path != nullptr && *path != '\0')
      write_measured_costs(exec, z.iterations, path);
    clear();
    exec.capture();
    exec.replay();
    exec.replay();
    exec.wait();
    const bool replayed = correct("replayed");
    std::printf("generated step: %zu ops, %zu GEMM outputs, numbers %s (eager) and %s (CUDA graph replay)\n",
                p.ops.size(), c.size(), eager ? "correct" : "WRONG", replayed ? "correct" : "WRONG");
    ok = eager && replayed;
  }
  for (void* d : scratch) cudaFree(d);
  for (float* d : owned) cudaFree(d);
  cudaFree(stand_in_target);
  cublasDestroy(blas);
  return ok;
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
    ncclComm_t solo = nullptr;
    const int first_device = 0;
    cuda_ok(cudaSetDevice(first_device), "cudaSetDevice");
    if (const ncclResult_t r = ncclCommInitAll(&solo, 1, &first_device); r != ncclSuccess)
      throw std::runtime_error(std::string("ncclCommInitAll (one rank): ") + ncclGetErrorString(r));
    const bool generated_ok = generated_step_correct(z, solo);
    ncclCommDestroy(solo);

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
                z.hidden_size, z.num_layers, serialized_ok ? "correct" : "WRONG", overlapped_ok ? "correct" : "WRONG");
    std::printf("step: overlapped %.3f ms, serialized %.3f ms (compute alone %.3f ms, communication alone %.3f ms)\n",
                overlapped_ms, serialized_ms, compute_ms, comm_ms);
    const double parts = compute_ms > comm_ms ? compute_ms : comm_ms;
    std::printf(
        "{\"gpus\": %d, \"hidden\": %d, \"layers\": %d, \"comm_repeat\": %d, \"overlapped_ms\": %.4f, "
        "\"serialized_ms\": %.4f, \"compute_ms\": %.4f, \"comm_ms\": %.4f, \"max_of_parts_ms\": %.4f, "
        "\"overlapped_over_serialized\": %.4f, \"overlapped_over_max_of_parts\": %.4f, \"generated_step_ok\": %s, "
        "\"numerics_ok\": %s}\n",
        devices, z.hidden_size, z.num_layers, z.comm_repeat, overlapped_ms, serialized_ms, compute_ms, comm_ms, parts,
        overlapped_ms / serialized_ms, overlapped_ms / parts, generated_ok ? "true" : "false",
        generated_ok && serialized_ok && overlapped_ok ? "true" : "false");
    return generated_ok && serialized_ok && overlapped_ok ? 0 : 1;
  } catch (const std::exception& ex) {
    std::printf("FAILED: %s\n", ex.what());
    return 1;
  }
}
