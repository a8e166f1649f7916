#pragma once
/// @file
/// The DP family's builder: gradient reduction and parameter all-gather of one rank's layers in
/// buckets, inside the forward and backward that the composed step (step.hpp) issues.
///
/// Gradients are reduced in buckets of `bucket_size` parameters formed in reverse layer order,
/// during the last micro-batch's backward (earlier micro-batches only accumulate). With
/// `overlap_grad_reduce` a bucket's reduce-scatter (distributed optimizer) or all-reduce is issued
/// on the dp stream as soon as its last gradient is produced, and the optimizer waits for all of
/// them; without it every reduction runs on the compute stream after the backward. With the
/// distributed optimizer the step starts by all-gathering the updated parameters, bucket by
/// bucket: with `overlap_param_gather` on the dp stream, one bucket ahead of the forward that
/// needs it; otherwise all of them on the compute stream before the forward. Expert parameters
/// (MoE) are reduced and gathered over the expert-data-parallel group, next to the dense ones.

#include <cstdint>
#include <string>
#include <vector>

#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/program.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

/// Local layer indices per bucket, from the last layer backwards (the order backward produces
/// gradients), for `layers` layers of `per_layer` parameters each.
inline std::vector<std::vector<int>> gradient_buckets(const resolved_settings& r, int layers,
                                                      std::int64_t per_layer) {
  std::vector<std::vector<int>> buckets(1);
  std::int64_t limit = r.bucket_size.value_or(per_layer * layers);
  if (r.num_buckets && *r.num_buckets > 0) limit = (per_layer * layers + *r.num_buckets - 1) / *r.num_buckets;
  if (!r.overlap_grad_reduce && !r.bucket_size && !r.num_buckets) limit = per_layer * layers;
  std::int64_t filled = 0;
  for (int layer = layers - 1; layer >= 0; --layer) {
    if (filled >= limit) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(layer);
    filled += per_layer;
  }
  return buckets;
}

namespace detail {

/// The parameters of a layer that one communicator reduces: the dense ones over the dp group,
/// the experts' over the expert-data-parallel group.
struct dp_part {
  std::string comm_name;
  std::vector<int> ranks;
  std::int64_t per_layer = 0;  ///< parameters of one layer held by this rank
};

/// Call `prologue()` first, `before_forward(l)` ahead of each forward of local layer l,
/// `after_backward(l, mb)` behind each backward, and `epilogue()` at the end (the optimizer).
class dp_buckets {
 public:
  dp_buckets(emitter& e, int compute_stream, std::vector<dp_part> parts, int layers,
             const settings& s, const resolved_settings& r, const workload& w)
      : e_(e), compute_(compute_stream), micro_batches_(w.micro_batches),
        r_(r), dist_opt_(s.distributed_optimizer), param_bytes_(w.element_bytes()),
        grad_bytes_(s.grad_reduce_in_fp32 ? 4 : w.element_bytes()) {
    for (dp_part& part : parts)
      if (part.ranks.size() > 1) parts_.push_back({std::move(part), -1, 0});
    std::int64_t per_layer = 0;
    for (const auto& part : parts_) per_layer += part.info.per_layer;
    for (auto& part : parts_) part.comm = e.comm(part.info.comm_name, part.info.ranks);
    if (parts_.empty()) return;
    dp_stream_ = e.add_stream(stream_role::dp_comm, -1);
    buckets_ = gradient_buckets(r, layers, per_layer);
    const int nb = static_cast<int>(buckets_.size());
    bucket_of_.assign(layers, 0);
    for (int b = 0; b < nb; ++b)
      for (const int layer : buckets_[b]) bucket_of_[layer] = b;
    missing_.assign(nb, 0);
    for (int b = 0; b < nb; ++b) missing_[b] = static_cast<int>(buckets_[b].size());
    gathered_event_.assign(nb, -1);
    // Buffers: params[l], grads[l], reduced gradients[b] and the parameter shard[b] the
    // optimizer updates (the whole bucket without the distributed optimizer).
    params0_ = e.new_buffers(2 * layers + 2 * nb);
    grads0_ = params0_ + layers;
    reduced0_ = grads0_ + layers;
    shard0_ = reduced0_ + nb;
    optimizer_parameters_ = per_layer * layers;
    for (const auto& part : parts_)
      if (dist_opt_) optimizer_parameters_ -= part.info.per_layer * layers * (part.info.ranks.size() - 1) /
                                              static_cast<std::int64_t>(part.info.ranks.size());
  }

  bool active() const { return !parts_.empty(); }
  /// The buffers the forward and backward of local layer l read and write (none when inactive).
  std::vector<int> params(int l) const { return active() ? std::vector<int>{params0_ + l} : std::vector<int>{}; }
  std::vector<int> grads(int l) const { return active() ? std::vector<int>{grads0_ + l} : std::vector<int>{}; }

  void prologue() {
    if (!active() || !dist_opt_) return;
    const int nb = static_cast<int>(buckets_.size());
    if (r_.overlap_param_gather) gather(nb - 1);
    else
      for (int b = nb - 1; b >= 0; --b) gather(b);
  }

  void before_forward(int l) {
    if (!active()) return;
    const int b = bucket_of_[l];
    if (gathered_event_[b] < 0) return;  // not gathered on the dp stream, or already waited
    // First use of this bucket: prefetch the next one, then wait for this one.
    if (b > 0 && gathered_event_[b - 1] == -1) gather(b - 1);
    e_.wait(compute_, gathered_event_[b]);
    gathered_event_[b] = -2;
  }

  void after_backward(int l, int micro_batch) {
    if (!active() || micro_batch + 1 != micro_batches_) return;
    const int b = bucket_of_[l];
    if (--missing_[b] != 0 || !r_.overlap_grad_reduce) return;
    e_.cross(compute_, dp_stream_);
    reduce(dp_stream_, b);
  }

  void epilogue() {
    if (active() && !r_.overlap_grad_reduce)
      for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) reduce(compute_, b);
    if (active() && r_.overlap_grad_reduce) e_.cross(dp_stream_, compute_);
    std::vector<int> reduced, shards;
    for (int b = 0; active() && b < static_cast<int>(buckets_.size()); ++b) {
      reduced.push_back(reduced0_ + b);
      shards.push_back(shard0_ + b);
    }
    // Adam: about 16 bytes of state per parameter of this rank's shard (or replica).
    e_.push(op{.kind = op_kind::compute, .stream = compute_, .name = "optimizer",
               .memory_bytes = 16 * optimizer_parameters_, .reads = reduced, .writes = shards});
  }

  /// Without an active group the optimizer updates `parameters` (this rank's whole model part).
  void set_replicated_parameters(std::int64_t parameters) {
    if (!active()) optimizer_parameters_ = parameters;
  }

 private:
  struct part_state {
    dp_part info;
    int comm = -1;
    std::int64_t seq = 0;
  };

  std::vector<int> layers_of(int b, int base) const {
    std::vector<int> out;
    for (const int layer : buckets_[b]) out.push_back(base + layer);
    return out;
  }
  void issue(int stream, collective c, const std::string& name, int b, std::vector<int> reads,
                  std::vector<int> writes) {
    const auto layers = static_cast<std::int64_t>(buckets_[b].size());
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      part_state& part = parts_[i];
      e_.push(op{.kind = op_kind::collective, .stream = stream,
                 .name = name + (i == 0 ? "" : "_" + part.info.comm_name.substr(0, part.info.comm_name.find('.'))),
                 .coll = c, .comm = part.comm, .seq = part.seq++,
                 .bytes = layers * part.info.per_layer *
                          (c == collective::all_gather ? param_bytes_ : grad_bytes_),
                 .family = family::dp, .reads = reads, .writes = writes});
    }
  }
  void gather(int b) {
    const int stream = r_.overlap_param_gather ? dp_stream_ : compute_;
    if (r_.overlap_param_gather) e_.cross(compute_, dp_stream_);  // after the last optimizer write
    issue(stream, collective::all_gather, "param_all_gather_b" + std::to_string(b), b,
               {shard0_ + b}, layers_of(b, params0_));
    if (r_.overlap_param_gather) gathered_event_[b] = e_.record(dp_stream_);
  }
  void reduce(int stream, int b) {
    issue(stream, dist_opt_ ? collective::reduce_scatter : collective::all_reduce,
               "grad_reduce_b" + std::to_string(b), b, layers_of(b, grads0_), {reduced0_ + b});
  }

  emitter& e_;
  int compute_, micro_batches_;
  const resolved_settings& r_;
  bool dist_opt_;
  int param_bytes_, grad_bytes_;
  std::vector<part_state> parts_;
  int dp_stream_ = -1;
  std::vector<std::vector<int>> buckets_;
  std::vector<int> bucket_of_, missing_, gathered_event_;
  int params0_ = 0, grads0_ = 0, reduced0_ = 0, shard0_ = 0;
  std::int64_t optimizer_parameters_ = 0;
};

}  // namespace detail

}  // namespace overlap::schedule
