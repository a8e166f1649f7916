#pragma once
// bf16 GEMMs as the profile times them: y = x w^T (x: m x k, w: n x k, row-major: PyTorch's
// nn.Linear layout) through cuBLASLt with fp32 accumulation, the algorithm its heuristic ranks
// first for each shape; and evenly routed experts' grouped GEMMs as one strided batched cuBLAS
// call (every group the same size, which is what a grouped GEMM of even routing is).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

namespace overlap_profile {

inline void cublas_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

class gemms {
 public:
  explicit gemms(std::size_t workspace_bytes = std::size_t{32} << 20) : workspace_bytes_(workspace_bytes) {
    cublas_ok(cublasLtCreate(&lt_), "cublasLtCreate");
    cublas_ok(cublasCreate(&blas_), "cublasCreate");
    if (cudaMalloc(&workspace_, workspace_bytes_) != cudaSuccess) throw std::runtime_error("cudaMalloc (workspace)");
  }
  ~gemms() {
    for (auto& [shape, p] : plans_) {
      cublasLtMatrixLayoutDestroy(p.a);
      cublasLtMatrixLayoutDestroy(p.b);
      cublasLtMatrixLayoutDestroy(p.c);
      cublasLtMatmulDescDestroy(p.op);
    }
    cudaFree(workspace_);
    cublasDestroy(blas_);
    cublasLtDestroy(lt_);
  }
  gemms(const gemms&) = delete;
  gemms& operator=(const gemms&) = delete;

  /// y (m x n) = x (m x k) w^T (w: n x k), all bf16, row-major, on `stream`.
  void dense(std::int64_t m, std::int64_t n, std::int64_t k, const void* x, const void* w, void* y,
             cudaStream_t stream) {
    const plan& p = plan_of(m, n, k);
    const float alpha = 1, beta = 0;
    // Column-major: y^T (n x m) = (w as k x n)^T (x as k x m).
    cublas_ok(cublasLtMatmul(lt_, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                             workspace_bytes_, stream),
              "cublasLtMatmul");
  }

  /// `groups` products y_g (m x n) = x_g (m x k) w_g^T (w_g: n x k), stored one after another.
  void grouped(std::int64_t groups, std::int64_t m, std::int64_t n, std::int64_t k, const void* x, const void* w,
               void* y, cudaStream_t stream) {
    const float alpha = 1, beta = 0;
    cublas_ok(cublasSetStream(blas_, stream), "cublasSetStream");
    cublas_ok(
        cublasGemmStridedBatchedEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                   static_cast<int>(k), &alpha, w, CUDA_R_16BF, static_cast<int>(k), n * k, x,
                                   CUDA_R_16BF, static_cast<int>(k), m * k, &beta, y, CUDA_R_16BF, static_cast<int>(n),
                                   m * n, static_cast<int>(groups), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
  }

 private:
  struct plan {
    cublasLtMatmulDesc_t op{};
    cublasLtMatrixLayout_t a{}, b{}, c{};
    cublasLtMatmulAlgo_t algo{};
  };
  const plan& plan_of(std::int64_t m, std::int64_t n, std::int64_t k) {
    const auto key = std::make_tuple(m, n, k);
    if (const auto it = plans_.find(key); it != plans_.end()) return it->second;
    plan p;
    cublas_ok(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
    cublas_ok(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose),
              "CUBLASLT_MATMUL_DESC_TRANSA");
    cublas_ok(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep),
              "CUBLASLT_MATMUL_DESC_TRANSB");
    const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    cublas_ok(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, u(k), u(n), k), "cublasLtMatrixLayoutCreate (w)");
    cublas_ok(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, u(k), u(m), k), "cublasLtMatrixLayoutCreate (x)");
    cublas_ok(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, u(n), u(m), n), "cublasLtMatrixLayoutCreate (y)");
    cublasLtMatmulPreference_t preference{};
    cublas_ok(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    cublas_ok(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &workspace_bytes_, sizeof workspace_bytes_),
              "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES");
    cublasLtMatmulHeuristicResult_t best{};
    int found = 0;
    const cublasStatus_t s =
        cublasLtMatmulAlgoGetHeuristic(lt_, p.op, p.a, p.b, p.c, p.c, preference, 1, &best, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    cublas_ok(s, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0)
      throw std::runtime_error("cuBLASLt has no bf16 algorithm for " + std::to_string(m) + " x " + std::to_string(n) +
                               " x " + std::to_string(k));
    p.algo = best.algo;
    return plans_.emplace(key, p).first->second;
  }

  cublasLtHandle_t lt_{};
  cublasHandle_t blas_{};
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, plan> plans_;
};

}  // namespace overlap_profile
