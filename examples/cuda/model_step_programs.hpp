#pragma once
// The programs of examples/cuda/model_step.cpp and their resources, built by one function for
// any executor API: the example runs them on CUDA, cuBLAS and NCCL; tests/cuda/
// test_gpu_programs.cpp runs the very same through the recording stand-in on every CI machine.
#include <cstdint>
#include <functional>
#include <vector>

#include <overlap/cuda/bind.hpp>
#include <overlap/cuda/resources.hpp>
#include <overlap/overlap.hpp>
#include <overlap/program/program.hpp>
#include <overlap/schedule/step.hpp>

namespace model_step {

namespace ov = overlap;
namespace sc = overlap::schedule;
using sc::op_type;

struct sizes {
  int hidden_size, num_layers, iterations, comm_repeat;
};

enum class variant { overlapped, serialized, compute_only, comm_only };

/// The hand-written data-parallel step of rank `rank` of `ranks`: forward GEMMs, then per layer
/// from the top its backward GEMM (the weight gradient) and that gradient's all-reduce;
/// overlapped, the all-reduce runs on the communication stream after an event, serialized on the
/// compute stream.
inline sc::program step_program(int rank, int ranks, const sizes& z, variant v) {
  sc::program p;
  p.rank = rank;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, -1}};
  std::vector<int> all(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) all[static_cast<std::size_t>(r)] = r;
  p.comms = {{"dp", all}};
  const bool compute = v != variant::comm_only, comm = v != variant::compute_only;
  const int comm_stream = v == variant::serialized ? 0 : 1;
  const std::int64_t grad_bytes = std::int64_t{z.hidden_size} * z.hidden_size * 4;
  const auto at = [](int l) { return sc::location{.layer = l, .micro_batch = 0}; };
  if (compute)
    for (int l = 0; l < z.num_layers; ++l)
      p.ops.push_back({.kind = sc::op_kind::compute, .stream = 0, .key = {.type = op_type::fc1_fprop, .at = at(l)}});
  for (int l = z.num_layers - 1; l >= 0; --l) {
    if (compute)
      p.ops.push_back({.kind = sc::op_kind::compute, .stream = 0, .key = {.type = op_type::fc1_wgrad, .at = at(l)}});
    if (!comm) continue;
    if (compute && comm_stream == 1) {
      p.ops.push_back({.kind = sc::op_kind::record, .stream = 0, .event = p.num_events});
      p.ops.push_back({.kind = sc::op_kind::wait, .stream = 1, .event = p.num_events++});
    }
    for (int k = 0; k < z.comm_repeat; ++k)
      p.ops.push_back({.kind = sc::op_kind::collective,
                       .stream = comm_stream,
                       .key = {.type = op_type::dp_grad_reduce, .at = {.layer = l, .bucket = l}},
                       .coll = sc::collective::all_reduce,
                       .comm = 0,
                       .bytes = grad_bytes});
  }
  if (compute && comm && comm_stream == 1) {  // the optimizer would wait for the last reduction
    p.ops.push_back({.kind = sc::op_kind::record, .stream = 1, .event = p.num_events});
    p.ops.push_back({.kind = sc::op_kind::wait, .stream = 0, .event = p.num_events++});
  }
  return p;
}

/// `step_program`'s resources: `forward` and `wgrad` for its two GEMM types, each layer's
/// gradient (`gradient(layer)`, fp32 `f32`) all-reduced in place on `comm`.
template <class Api>
ov::cuda::basic_resources<Api> step_resources(typename Api::comm_t comm, typename Api::dtype_t f32,
                                              typename ov::cuda::basic_resources<Api>::kernel forward,
                                              typename ov::cuda::basic_resources<Api>::kernel wgrad,
                                              std::function<void*(int layer)> gradient) {
  ov::cuda::basic_resources<Api> r;
  r.comms["dp"] = comm;
  r.kernels[op_type::fc1_fprop] = std::move(forward);
  r.kernels[op_type::fc1_wgrad] = std::move(wgrad);
  r.buffers = [gradient = std::move(gradient), f32](const sc::op& o) {
    void* grad = gradient(o.key.at.layer);
    return ov::cuda::basic_buffer<Api>{grad, o.bytes, grad, o.bytes, f32};
  };
  return r;
}

/// The one-rank config of the generated step, and its workload.
using generated_config = ov::config<ov::tp<1>, ov::dp<1>, ov::precision<ov::dtype::bf16>>;
inline sc::workload generated_workload(int layers) {
  sc::workload w;
  w.num_layers = layers;
  w.micro_batches = 2;
  w.seq_length = 1024;
  w.hidden_size = 1024;
  w.ffn_hidden_size = 2816;
  w.num_attention_heads = 8;
  w.vocab_size = 32000;
  return w;
}

/// The GEMM types of a generated program.
template <class F>
auto gemm_binding(F gemm) {
  return ov::cuda::on<op_type::qkv_fprop, op_type::qkv_dgrad, op_type::qkv_wgrad, op_type::proj_fprop,
                      op_type::proj_dgrad, op_type::proj_wgrad, op_type::fc1_fprop, op_type::fc1_dgrad,
                      op_type::fc1_wgrad, op_type::fc2_fprop, op_type::fc2_dgrad, op_type::fc2_wgrad,
                      op_type::lm_head_fprop, op_type::lm_head_bprop>(std::move(gemm));
}
inline constexpr sc::op_type_set gemm_types = decltype(gemm_binding([](const sc::op_key&, int) {}))::types;

/// The generated step's resources: `gemm` for its GEMM types and `stand_in` for every other
/// compute type a generated program can have (kernels_for checks at compile time that
/// `generated_config`'s schedule emits no more); every communicator is `comm` (all of one rank)
/// and each communication op works in place in `allocate(bytes)` (a one-rank all-gather is a
/// copy), as bytes (`u8`).
template <class Api>
ov::cuda::basic_resources<Api> generated_resources(const sc::program& p, typename Api::comm_t comm,
                                                   typename Api::dtype_t u8,
                                                   typename ov::cuda::basic_resources<Api>::kernel gemm,
                                                   typename ov::cuda::basic_resources<Api>::kernel stand_in,
                                                   std::function<void*(std::int64_t bytes)> allocate) {
  ov::cuda::basic_resources<Api> r;
  r.kernels = ov::cuda::kernels_for<generated_config::schedule>(
      gemm_binding(std::move(gemm)),
      ov::cuda::on<op_type::embedding_fprop, op_type::embedding_bprop, op_type::layernorm_fprop,
                   op_type::layernorm_bprop, op_type::attn_core_fprop, op_type::attn_core_bprop,
                   op_type::tp_ring_reduce, op_type::router_fprop, op_type::router_bprop, op_type::permute_fprop,
                   op_type::permute_bprop, op_type::unpermute_fprop, op_type::unpermute_bprop, op_type::experts_fprop,
                   op_type::experts_dgrad, op_type::experts_wgrad, op_type::shared_experts_fprop,
                   op_type::shared_experts_dgrad, op_type::shared_experts_wgrad, op_type::optimizer_step>(
          std::move(stand_in)));
  for (const sc::communicator& c : p.comms) r.comms[c.name] = comm;
  r.buffers = [allocate = std::move(allocate), u8](const sc::op& o) {
    void* d = allocate(o.bytes);
    return ov::cuda::basic_buffer<Api>{d, o.bytes, d, o.bytes, u8};
  };
  return r;
}

}  // namespace model_step
