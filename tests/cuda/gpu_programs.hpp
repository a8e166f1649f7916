#pragma once
// The program and resources of the GPU test (gpu_test.cpp), built by one function for any
// executor API: the test runs them on the real CUDA runtime and NCCL, and test_gpu_programs.cpp
// runs the very same through the recording stand-in on every CI machine, so a GPU test that the
// executor's pre-flight would refuse fails on the CPU first.
#include <cstddef>
#include <cstdint>
#include <functional>

#include <overlap/cuda/resources.hpp>
#include <overlap/program/program.hpp>

namespace gpu_programs {

namespace sc = overlap::schedule;

inline constexpr std::size_t elements = 1 << 16;
inline constexpr std::int64_t bytes = elements * sizeof(float);

/// One rank: produce (a weight gradient: copy the source into the gradient) -> all-reduce,
/// all-gather and all-to-all on the communication stream -> consume (the optimizer step: copy
/// the reduced gradient out). No send/recv: a one-rank communicator has no peer, and one GPU
/// holds one NCCL rank.
inline sc::program one_rank_program() {
  using K = sc::op_kind;
  using sc::op_type;
  sc::program p;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}};
  p.comms = {{"solo", {0}}};
  p.num_events = 2;
  p.ops = {
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc1_wgrad, .at = {.layer = 0}}},
      {.kind = K::record, .stream = 0, .event = 0},
      {.kind = K::wait, .stream = 1, .event = 0},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::dp_grad_reduce, .at = {.bucket = 0}},
       .coll = sc::collective::all_reduce,
       .comm = 0,
       .bytes = bytes},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::dp_param_gather, .at = {.bucket = 0}},
       .coll = sc::collective::all_gather,
       .comm = 0,
       .bytes = bytes},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::ep_dispatch, .at = {.layer = 0}},
       .coll = sc::collective::all_to_all,
       .comm = 0,
       .bytes = bytes},
      {.kind = K::record, .stream = 1, .event = 1},
      {.kind = K::wait, .stream = 0, .event = 1},
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::optimizer_step}},
  };
  return p;
}

/// The device arrays of `one_rank_program`, `bytes` each.
struct one_rank_memory {
  void* source = nullptr;
  void* grad = nullptr;
  void* reduced = nullptr;
  void* gathered = nullptr;
  void* exchanged = nullptr;
  void* out = nullptr;
};

/// Its resources on `Api`: `comm` for "solo", fp32 elements (`f32`), and `copy(to, from, bytes,
/// stream)` for the two compute ops' work.
template <class Api>
overlap::cuda::basic_resources<Api> one_rank_resources(
    typename Api::comm_t comm, const one_rank_memory& m, typename Api::dtype_t f32,
    std::function<void(void*, const void*, std::int64_t, typename Api::stream_t)> copy) {
  using sc::op_type;
  overlap::cuda::basic_resources<Api> r;
  r.comms["solo"] = comm;
  r.kernels[op_type::fc1_wgrad] = [m, copy](const sc::op_key&, typename Api::stream_t s) {
    copy(m.grad, m.source, bytes, s);
  };
  r.kernels[op_type::optimizer_step] = [m, copy](const sc::op_key&, typename Api::stream_t s) {
    copy(m.out, m.reduced, bytes, s);
  };
  r.buffers = [m, f32](const sc::op& o) -> overlap::cuda::basic_buffer<Api> {
    switch (o.key.type) {
      case op_type::dp_grad_reduce: return {m.grad, bytes, m.reduced, bytes, f32};
      case op_type::dp_param_gather: return {m.grad, bytes, m.gathered, bytes, f32};
      default: return {m.grad, bytes, m.exchanged, bytes, f32};
    }
  };
  return r;
}

}  // namespace gpu_programs
