#pragma once
// The device side of overlap-profile: a copy kernel shaped like an NCCL kernel (a few CTAs of 512
// threads streaming bytes, each CTA stamping its SM and its start and end), an empty kernel for
// launch costs, a clock probe, and a fill of random bf16 values (GEMMs on zeros draw less power,
// and run at clocks a training step never sees).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace overlap_profile {

inline void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

inline constexpr int copy_threads = 512;

/// What one CTA of the copy kernel saw: its SM and its start and end on %globaltimer (ns).
struct cta_stamp {
  unsigned long long start, end;
  unsigned sm, pad;
};

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ inline unsigned sm_id() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

/// Copies `n16` 16-byte words from `from` to `to` with a grid-stride loop; CTA b writes its stamp
/// to `stamps[b]` when `stamps` is not null.
__global__ void copy_kernel(const int4* __restrict__ from, int4* __restrict__ to, std::size_t n16, cta_stamp* stamps) {
  const unsigned long long start = global_ns();
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n16; i += stride) to[i] = from[i];
  __syncthreads();
  if (stamps != nullptr && threadIdx.x == 0) stamps[blockIdx.x] = {start, global_ns(), sm_id(), 0};
}

__global__ void empty_kernel() {}

/// Spins `cycles` SM clocks and reports them with the nanoseconds they took: out = {cycles, ns}.
__global__ void clock_probe(long long cycles, unsigned long long* out) {
  const long long c0 = clock64();
  const unsigned long long t0 = global_ns();
  long long c = c0;
  while (c - c0 < cycles) c = clock64();
  out[0] = static_cast<unsigned long long>(c - c0);
  out[1] = global_ns() - t0;
}

/// Fills `n` bf16 values (as raw bits) with a hash of their index, uniform in about [-1, 1].
__global__ void fill_random(unsigned short* data, std::size_t n, unsigned seed) {
  for (std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float v = static_cast<float>(h & 0xffff) / 32768.0f - 1.0f;
    data[i] = static_cast<unsigned short>(__float_as_uint(v) >> 16);  // bf16: the float's top half
  }
}

/// Copies `bytes` (a multiple of 16) on `ctas` CTAs of `stream`; `stamps` as copy_kernel's.
inline void copy(const void* from, void* to, std::size_t bytes, int ctas, cudaStream_t stream,
                 cta_stamp* stamps = nullptr) {
  copy_kernel<<<ctas, copy_threads, 0, stream>>>(static_cast<const int4*>(from), static_cast<int4*>(to), bytes / 16,
                                                 stamps);
  cuda_ok(cudaGetLastError(), "copy kernel launch");
}

inline void fill(void* data, std::size_t bf16_values, unsigned seed, cudaStream_t stream = nullptr) {
  fill_random<<<1024, 256, 0, stream>>>(static_cast<unsigned short*>(data), bf16_values, seed);
  cuda_ok(cudaGetLastError(), "fill launch");
}

}  // namespace overlap_profile
