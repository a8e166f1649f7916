#pragma once
/// @file
/// The DP family's generator: one step of a data-parallel group (the model replicated on `dp`
/// ranks; tensor, pipeline and expert parallelism are not composed in yet).
///
/// Gradients are reduced in buckets of `bucket_size` parameters formed in reverse layer order,
/// during the last micro-batch's backward (earlier micro-batches only accumulate). With
/// `overlap_grad_reduce` a bucket's reduce-scatter (distributed optimizer) or all-reduce is issued
/// on the dp stream as soon as its last gradient is produced, and the optimizer waits for all of
/// them; without it every reduction runs on the compute stream after the backward. With the
/// distributed optimizer the step starts by all-gathering the updated parameters, bucket by
/// bucket: with `overlap_param_gather` on the dp stream, one bucket ahead of the forward that
/// needs it; otherwise all of them on the compute stream before the forward.

#include <cstdint>
#include <string>
#include <vector>

#include <overlap/schedule/program.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

/// Layers per bucket, from the last layer backwards (the order backward produces gradients).
inline std::vector<std::vector<int>> gradient_buckets(const resolved_settings& r, const workload& w) {
  std::vector<std::vector<int>> buckets(1);
  const std::int64_t per_layer = w.layer_parameters();
  std::int64_t limit = r.bucket_size.value_or(per_layer * w.layers);
  if (r.num_buckets && *r.num_buckets > 0)
    limit = (per_layer * w.layers + *r.num_buckets - 1) / *r.num_buckets;
  if (!r.overlap_grad_reduce && !r.bucket_size && !r.num_buckets) limit = per_layer * w.layers;
  std::int64_t filled = 0;
  for (int layer = w.layers - 1; layer >= 0; --layer) {
    if (filled >= limit) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(layer);
    filled += per_layer;
  }
  return buckets;
}

inline std::vector<program> data_parallel_step(const settings& s, const resolved_settings& r,
                                               const workload& w) {
  const int dp = s.data_parallel_size;
  const auto buckets = gradient_buckets(r, w);
  const int nb = static_cast<int>(buckets.size());
  const int grad_bytes = s.grad_reduce_in_fp32 ? 4 : w.element_bytes();
  const std::int64_t per_layer = w.layer_parameters();
  const bool dist_opt = s.distributed_optimizer;

  // Buffers: params[l], grads[l], reduced gradients[b] and the parameter shard[b] the optimizer
  // updates (the whole bucket without the distributed optimizer).
  const int params0 = 0, grads0 = w.layers, reduced0 = 2 * w.layers, shard0 = 2 * w.layers + nb;
  std::vector<int> bucket_of(w.layers, 0);
  for (int b = 0; b < nb; ++b)
    for (const int layer : buckets[b]) bucket_of[layer] = b;

  std::vector<program> step;
  for (int rank = 0; rank < dp; ++rank) {
    program p;
    p.rank = rank;
    p.streams = {{stream_role::compute, 0}, {stream_role::dp_comm, -1}};
    const int compute = 0, dp_stream = 1;
    p.comms.push_back({"dp", {}});
    for (int i = 0; i < dp; ++i) p.comms[0].ranks.push_back(i);
    p.num_buffers = 2 * w.layers + 2 * nb;
    std::int64_t seq = 0;
    const auto collective_op = [&](int stream, collective c, std::string name, int bucket,
                                   std::vector<int> reads, std::vector<int> writes) {
      op o{.kind = op_kind::collective, .stream = stream, .name = std::move(name), .coll = c,
           .comm = 0, .seq = seq++,
           .bytes = static_cast<std::int64_t>(buckets[bucket].size()) * per_layer *
                    (c == collective::all_gather ? w.element_bytes() : grad_bytes),
           .family = family::dp, .reads = std::move(reads), .writes = std::move(writes)};
      p.ops.push_back(std::move(o));
    };
    const auto new_event = [&] { return p.num_events++; };
    const auto cross = [&](int from, int to) {  // `to` waits for what `from` issued so far
      const int e = new_event();
      p.ops.push_back(op{.kind = op_kind::record, .stream = from, .event = e});
      p.ops.push_back(op{.kind = op_kind::wait, .stream = to, .event = e});
    };
    const auto layers_of = [&](int b, int base) {
      std::vector<int> out;
      for (const int layer : buckets[b]) out.push_back(base + layer);
      return out;
    };

    // Parameter all-gathers (distributed optimizer): bucket nb-1 holds the first layers.
    std::vector<int> gathered_event(nb, -1);
    const auto gather = [&](int b) {
      const int stream = r.overlap_param_gather ? dp_stream : compute;
      if (r.overlap_param_gather) cross(compute, dp_stream);  // after the last optimizer write
      collective_op(stream, collective::all_gather, "param_all_gather_b" + std::to_string(b), b,
                    {shard0 + b}, layers_of(b, params0));
      if (r.overlap_param_gather) {
        gathered_event[b] = new_event();
        p.ops.push_back(op{.kind = op_kind::record, .stream = dp_stream, .event = gathered_event[b]});
      }
    };
    if (dist_opt && dp > 1) {
      if (r.overlap_param_gather) gather(nb - 1);
      else
        for (int b = nb - 1; b >= 0; --b) gather(b);
    }

    for (int mb = 0; mb < w.micro_batches; ++mb) {
      for (int layer = 0; layer < w.layers; ++layer) {
        const int b = bucket_of[layer];
        if (mb == 0 && gathered_event[b] >= 0) {
          // First use of this bucket: prefetch the next one, then wait for this one.
          if (b > 0 && gathered_event[b - 1] < 0) gather(b - 1);
          p.ops.push_back(op{.kind = op_kind::wait, .stream = compute, .event = gathered_event[b]});
          gathered_event[b] = -2;  // waited
        }
        p.ops.push_back(op{.kind = op_kind::compute, .stream = compute,
                           .name = "fwd_l" + std::to_string(layer) + "_mb" + std::to_string(mb),
                           .flops = w.layer_forward_flops(), .reads = {params0 + layer}});
      }
      const bool last = mb + 1 == w.micro_batches;
      for (int layer = w.layers - 1; layer >= 0; --layer) {
        p.ops.push_back(op{.kind = op_kind::compute, .stream = compute,
                           .name = "bwd_l" + std::to_string(layer) + "_mb" + std::to_string(mb),
                           .flops = 2 * w.layer_forward_flops(),
                           .reads = {params0 + layer, grads0 + layer},
                           .writes = {grads0 + layer}});
        const int b = bucket_of[layer];
        if (last && r.overlap_grad_reduce && dp > 1 && layer == buckets[b].back()) {
          cross(compute, dp_stream);
          collective_op(dp_stream, dist_opt ? collective::reduce_scatter : collective::all_reduce,
                        "grad_reduce_b" + std::to_string(b), b, layers_of(b, grads0),
                        {reduced0 + b});
        }
      }
    }
    if (dp > 1 && !r.overlap_grad_reduce)
      for (int b = 0; b < nb; ++b)
        collective_op(compute, dist_opt ? collective::reduce_scatter : collective::all_reduce,
                      "grad_reduce_b" + std::to_string(b), b, layers_of(b, grads0), {reduced0 + b});
    if (dp > 1 && r.overlap_grad_reduce) cross(dp_stream, compute);
    std::vector<int> reduced, shards;
    for (int b = 0; b < nb; ++b) {
      reduced.push_back(reduced0 + b);
      shards.push_back(shard0 + b);
    }
    // Adam: about 16 bytes of state per parameter of this rank's shard (or replica).
    const std::int64_t owned = per_layer * w.layers / (dist_opt ? dp : 1);
    p.ops.push_back(op{.kind = op_kind::compute, .stream = compute, .name = "optimizer",
                       .memory_bytes = 16 * owned, .reads = reduced, .writes = shards});
    step.push_back(std::move(p));
  }
  return step;
}

}  // namespace overlap::schedule
