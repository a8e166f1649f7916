#pragma once
// Closing the loop on one GPU (overlap-profile --check-step): a generated training step run on
// the GPU with kernels of the workload's own sizes, overlapped and serialized, next to what the
// simulator predicts for the same two programs from a measured profile.
//
// The step is rank 0 of a data-parallel pair (a dense model, the distributed optimizer with its
// gradient reduce-scatters and parameter all-gathers overlapped). One GPU holds one rank, so its
// communication runs as the trainer's own implementation would (`comm_overrides`): a copy kernel
// of the bytes the collective moves through this rank ((p - 1) / p of the tensor for an
// all-gather or reduce-scatter, twice that for an all-reduce, as much for an all-to-all) on the
// op's SMs, so real bytes move on the communication stream and its CTAs take SMs from the GEMMs.
// Compute ops run as cuBLASLt GEMMs of their shape (routed experts as their two grouped GEMMs,
// core attention as the two batched products Q K^T and P V over half the keys: causal), their
// modules' memory-bound kernels and memory-bound ops as copies of their bytes, and an op known
// only by its flops as a cube GEMM of those flops. The predictor prices each op as that kernel,
// from the profile: the cost model's GEMMs, grouped GEMMs for the batched products, the
// profile's copy-kernel rate per CTA for the communication.
//
// Everything here is host code: tests/cuda/test_gpu_programs.cpp runs the programs and their
// resources through the recording stand-in, and tests/test_profile.cpp the predictor.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <overlap/cuda/resources.hpp>
#include <overlap/overlap.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/cost/analytic.hpp>
#include <overlap/sim/simulate.hpp>

namespace overlap_profile {

namespace sc = overlap::schedule;

/// The two programs the check runs, and each communicator's size in the step they came from.
struct one_gpu_step {
  sc::program overlapped, serialized;
  std::vector<int> comm_sizes;
};

/// The model and batch of the check: a Llama-like dense model of 4 layers of hidden 4096 over
/// one 2,048-token micro-batch, where the gradients' and parameters' transfers take about an
/// eighth of the serialized step (on the H200 profile: 26.9 ms serialized, 23.5 overlapped).
inline sc::workload check_workload() {
  return {.num_layers = 4,
          .micro_batches = 1,
          .seq_length = 2048,
          .hidden_size = 4096,
          .ffn_hidden_size = 14336,
          .num_attention_heads = 32,
          .num_query_groups = 8,
          .vocab_size = 32000};
}
using check_config = overlap::config<overlap::dp<2>, overlap::distributed_optimizer<>, overlap::overlap_grad_reduce<>,
                                     overlap::overlap_param_gather<>, overlap::precision<overlap::dtype::bf16>>;

/// `step`'s rank `rank` on one GPU: every communicator of one rank (its size before kept in
/// `comm_sizes`), and the same program with every op on stream 0 in issue order (serialized).
/// Refuses sends and receives: a one-rank communicator has no peer.
inline one_gpu_step on_one_gpu(const std::vector<sc::program>& step, int rank = 0) {
  one_gpu_step out;
  out.overlapped = step.at(static_cast<std::size_t>(rank));
  for (sc::communicator& c : out.overlapped.comms) {
    out.comm_sizes.push_back(static_cast<int>(c.ranks.size()));
    c.ranks = {out.overlapped.rank};
  }
  for (const sc::op& o : out.overlapped.ops)
    if (o.kind == sc::op_kind::send || o.kind == sc::op_kind::recv)
      throw std::invalid_argument("on_one_gpu: " + sc::display_name(o) + " is a send or receive; one GPU has no peer");
  out.serialized = out.overlapped;
  for (sc::op& o : out.serialized.ops) o.stream = 0;
  return out;
}

inline one_gpu_step check_step() { return on_one_gpu(check_config::schedule::generate(check_workload())); }

/// The bytes communication op `o` moves through this rank (see the top).
inline std::int64_t moved_bytes(const one_gpu_step& s, const sc::op& o) {
  const int p = s.comm_sizes.at(static_cast<std::size_t>(o.comm));
  if (o.kind != sc::op_kind::collective) return o.bytes;
  const std::int64_t share = o.bytes / p * (p - 1);
  return o.coll == sc::collective::all_reduce ? 2 * share : share;
}

/// What runs for one compute op: `problems` GEMMs (a dense one: groups 1) and a copy of
/// `copy_bytes` (read plus written) for its memory-bound part.
struct kernel_plan {
  std::vector<sc::gemm_shape> problems;
  std::int64_t copy_bytes = 0;
};
inline kernel_plan plan_of(const sc::op& o) {
  kernel_plan k;
  k.copy_bytes = o.memory_bytes;
  const sc::gemm_shape g = o.gemm;
  if (overlap::sim::analytic_cost_model::has_problem(o)) {
    if (overlap::sim::analytic_cost_model::routed_experts(o.key.type)) {
      const auto products = overlap::sim::analytic_cost_model::expert_products(o);
      k.problems.assign(products.begin(), products.end());
    } else if (overlap::sim::analytic_cost_model::core_attention(o.key.type)) {
      const std::int64_t keys = std::max<std::int64_t>(1, g.n / 2);                    // causal: half the keys
      const std::int64_t passes = o.key.type == sc::op_type::attn_core_bprop ? 2 : 1;  // ~2.5 forwards
      for (std::int64_t i = 0; i < passes; ++i) {
        k.problems.push_back({g.m, keys, g.k, g.groups});  // Q K^T
        k.problems.push_back({g.m, g.k, keys, g.groups});  // P V
      }
    } else {
      k.problems = {g};
    }
  } else if (o.flops > 0) {
    const auto side = std::max<std::int64_t>(64, static_cast<std::int64_t>(std::cbrt(o.flops / 2) / 64) * 64);
    k.problems = {{side, side, side, 1}};
  }
  return k;
}

/// The simulator's cost of each op as the check runs it, from a profile (see the top).
class check_cost : public overlap::sim::adjusted_cost_model {
 public:
  check_cost(overlap::sim::machine m, const one_gpu_step& s) : adjusted_cost_model(std::move(m)), step_(&s) {
    const overlap::sim::profile* p = machine().profile.get();
    if (p == nullptr || p->concurrency.copy_ctas <= 0)
      throw std::invalid_argument("check_cost: the machine needs a profile with its copy-kernel probe");
    // The probe's copy: 512 MiB read and written by copy_ctas CTAs.
    per_cta_ =
        2.0 * static_cast<double>(std::int64_t{512} << 20) / p->concurrency.copy_alone_us / p->concurrency.copy_ctas;
  }

  double compute_us(const sc::op& o, int sms) const override {
    const kernel_plan k = plan_of(o);
    const overlap::sim::profile_model& p = *analytic().profiled();
    double us = static_cast<double>(k.copy_bytes) / memory_rate();
    for (const sc::gemm_shape& g : k.problems) {
      const auto m = static_cast<double>(g.m), n = static_cast<double>(g.n), kk = static_cast<double>(g.k);
      // Rows per group: an expert's tokens (its weight gradient's k), else the product's m.
      const double rows =
          overlap::sim::analytic_cost_model::routed_experts(o.key.type) ? static_cast<double>(o.gemm.m) : m;
      us += g.groups == 1 ? p.gemm_us(m, n, kk) : p.grouped_us(static_cast<double>(g.groups), m, n, kk, rows);
    }
    return us * machine().sms / std::max(1, sms);
  }

  using cost_model::comm_us;
  double comm_us(const sc::op& o, const overlap::sim::placement&) const override {
    const int ctas = o.sms > 0 ? o.sms : machine().comm_sms;
    return static_cast<double>(2 * moved_bytes(*step_, o)) / std::min(per_cta_ * ctas, memory_rate());
  }
  double comm_latency_us(const sc::op&, const overlap::sim::placement&) const override { return 0; }

 private:
  double memory_rate() const { return machine().memory_bytes_per_us * machine().memory_efficiency; }
  const one_gpu_step* step_;
  double per_cta_ = 0;
};

/// The predicted step time of `program` on `m` (computing from its profile).
inline double predicted_us(const overlap::sim::machine& m, const one_gpu_step& s, const sc::program& program,
                           int connections) {
  const check_cost cost(m, s);
  overlap::sim::options opt;
  opt.cuda_device_max_connections = connections;
  const overlap::sim::result r = overlap::sim::simulate({program}, cost, opt);
  if (r.deadlock) throw std::runtime_error("the check step deadlocks in the simulator:\n" + r.wait_for_graph);
  return r.step_time_us;
}

/// The resources of `program` (one of `s`'s) on `Api`: every compute op runs `compute(op,
/// stream)` and every communication op `communicate(op, moved bytes, CTAs, stream)`.
template <class Api>
overlap::cuda::basic_resources<Api> check_resources(
    const one_gpu_step& s, const sc::program& program,
    std::function<void(const sc::op&, typename Api::stream_t)> compute,
    std::function<void(const sc::op&, std::int64_t, int, typename Api::stream_t)> communicate, int comm_ctas) {
  overlap::cuda::basic_resources<Api> r;
  // A kernel gets the op's key: its op is found by its display name (unique in a generated step).
  auto by_name = std::make_shared<std::unordered_map<std::string, sc::op>>();
  for (const sc::op& o : program.ops) {
    if (o.kind == sc::op_kind::compute) {
      by_name->emplace(sc::display_name(o.key), o);
      r.kernels[o.key.type] = [by_name, compute](const sc::op_key& key, typename Api::stream_t stream) {
        compute(by_name->at(sc::display_name(key)), stream);
      };
    } else if (sc::is_communication(o.kind)) {
      r.comm_overrides[o.key.type] = [&s, communicate, comm_ctas](const sc::op& op, typename Api::stream_t stream) {
        communicate(op, moved_bytes(s, op), op.sms > 0 ? op.sms : comm_ctas, stream);
      };
    }
  }
  return r;
}

}  // namespace overlap_profile
