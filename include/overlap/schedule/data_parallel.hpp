#pragma once
/// @file
/// The DP family's builder: gradient reduction and parameter all-gather of one rank's model
/// chunks in buckets (buckets.hpp), inside the forward and backward that the composed step
/// (step.hpp) issues.
///
/// Each model chunk has its own buckets, and within a chunk the dense parameters (reduced over
/// the data-parallel group) and the experts' (over the expert-data-parallel group) have theirs.
/// Gradients are reduced during the last micro-batch's backward (earlier micro-batches only
/// accumulate): with `overlap_grad_reduce` a bucket's reduce-scatter (distributed optimizer) or
/// all-reduce is issued on the dp stream as soon as the last of its gradients is produced, and
/// the optimizer waits for all of them; without it every reduction runs on the compute stream
/// after the backward. With the distributed optimizer the step starts by all-gathering the
/// updated parameters, bucket by bucket: without `overlap_param_gather` all of them on the
/// compute stream before the forward; with it on the dp stream, as Megatron-Core dispatches them
/// (its DistributedDataParallel forward pre-hooks): the forward's first use of a bucket dispatches it if nothing has,
/// waits for it, and dispatches the next bucket of its chunk and group; with
/// `align_param_gather` in an interleaved pipeline the schedule dispatches whole chunks instead
/// (chunks 0 and 1 at the start, chunk c + 1 at the forward pp_rank virtual micro-batches before
/// chunk c starts) and a use only waits. Every chunk of every stage is bucketed alike here;
/// Megatron-Core buckets only the first stage's first chunk (the others have one bucket per
/// group), which is not modelled: with it the EP4 GBS 8 record of bench/fidelity leaves its band
/// (-6.8 % against +-5 %), which says another part of the model needs mending first. With a shared
/// embedding over several stages, its gradient is all-reduced between the first and last stage
/// before the optimizer.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/schedule/buckets.hpp>
#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/layout.hpp>
#include <overlap/schedule/parameter_storage.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule::detail {

/// What the DP builder is given: per model chunk, its tensors in model order; the groups that
/// reduce dense and expert parameters (a group of one rank reduces nothing); the shared
/// embedding's group and the embedding gradient's size, where there is one.
struct dp_plan {
  std::vector<std::vector<parameter_tensor>> chunks;
  group dense, expert;
  std::optional<group> embedding{};
  std::int64_t embedding_parameters = 0;
  op_type embedding_of = op_type::embedding_fprop;  ///< this stage's copy: embedding or output layer
  /// With overlap_grad_reduce, the reductions start after this stage's last pipeline action, in
  /// the pipeline's drain, instead of during its last backward: Megatron-Core's non-interleaved
  /// schedule with align_grad_reduce (its default) overlaps them only on the first stage ("other
  /// pipeline stages do grad reduction during pipeline bubble", schedules.py), so that a long
  /// reduction's wait does not hold a single hardware queue ahead of the stage's last send.
  bool reduce_after_pipeline = false;
  int pp = 1, stage = 0;          ///< the pipeline's stages and this rank's (for aligned gathers)
  parameter_storage params{};     ///< how the parameters are kept and gathered (parameter_storage.hpp)
  std::int64_t state_bytes = 12;  ///< the optimizer's state a parameter updated (optimizer_state.hpp)
};

class dp_buckets {
 public:
  dp_buckets(emitter& e, int compute_stream, dp_plan plan, const settings& s, const resolved_settings& r,
             int micro_batches, int element_bytes)
      : e_(e),
        compute_(compute_stream),
        micro_batches_(micro_batches),
        r_(r),
        dist_opt_(s.distributed_optimizer),
        params_(plan.params),
        grad_bytes_(s.grad_reduce_in_fp32 ? 4 : element_bytes),
        embedding_(std::move(plan.embedding)),
        embedding_parameters_(plan.embedding_parameters),
        embedding_of_(plan.embedding_of),
        reduce_after_pipeline_(plan.reduce_after_pipeline),
        pp_(plan.pp),
        stage_(plan.stage),
        state_bytes_(plan.state_bytes),
        chunks_(static_cast<int>(plan.chunks.size())) {
    const group* groups[2] = {&plan.dense, &plan.expert};
    for (int part = 0; part < 2; ++part) {
      const bool active = groups[part]->ranks.size() > 1;
      if (active) comm_[part] = e.comm(groups[part]->name, groups[part]->ranks);
      size_[part] = std::max(1, static_cast<int>(groups[part]->ranks.size()));
      for (std::size_t c = 0; c < plan.chunks.size(); ++c) {
        std::vector<parameter_tensor> mine;
        for (const auto& t : plan.chunks[c])
          if (t.expert == (part == 1)) mine.push_back(t);
        for (const auto& t : mine) (active ? reduced_parameters_[part] : replicated_parameters_) += t.parameters;
        if (!active) replicated_.insert(replicated_.end(), mine.begin(), mine.end());
        if (!active || mine.empty()) continue;
        const auto packed = pack_buckets(mine, r.bucket_size, r.num_buckets);
        for (std::size_t b = 0; b < packed.size(); ++b)
          buckets_.push_back({packed[b], static_cast<int>(c), static_cast<int>(b), part, packed[b].uses()});
      }
    }
    if (embedding_) embedding_comm_ = e.comm(embedding_->name, embedding_->ranks);
    if (!buckets_.empty()) dp_stream_ = e.add_stream(stream_role::dp_comm, -1);
    size_state(plan);
  }

  /// How many buckets each chunk and group got (for tests and reports).
  std::size_t bucket_count() const { return buckets_.size(); }

  void prologue() {
    if (buckets_.empty() || !dist_opt_) return;
    if (!r_.overlap_param_gather) {
      for (std::size_t b = buckets_.size(); b-- > 0;) gather(b);
      return;
    }
    if (aligned())
      for (int c = 0; c < std::min(chunks_, 2); ++c) gather_chunk(c);
  }

  /// Ahead of the pipeline's `k`-th forward (its virtual micro-batch k): with aligned gathers,
  /// Megatron-Core's interleaved schedule dispatches chunk c + 1 where the virtual micro-batch
  /// k + pp_rank is the first of chunk c (forward_step_helper_preprocess: at the same time across
  /// the pipeline), for 1 < c + 1 < chunks.
  void before_pipeline_forward(int k) {
    if (buckets_.empty() || !dist_opt_ || !r_.overlap_param_gather || !aligned()) return;
    const int v = k + stage_;
    if (v >= pp_ * chunks_ || v % pp_ != 0) return;
    if (const int next = v / pp_ + 1; next > 1 && next < chunks_) gather_chunk(next);
  }

  /// Ahead of the forward op `used_by` of `holder` of `chunk`: the parameters it reads must be
  /// gathered.
  void before_forward(int chunk, int holder, op_type used_by) {
    for (std::size_t b = buckets_.size(); b-- > 0;) {
      auto& k = buckets_[b];
      if (k.chunk != chunk || !holds(k, holder, used_by) || k.event == waited || !dist_opt_ || !r_.overlap_param_gather)
        continue;
      if (k.event == not_issued) gather(b);
      // First use of this bucket: unless the schedule dispatches them (aligned), the next bucket of
      // its chunk and group is dispatched too (issued before the wait, as it is on the dp stream
      // behind this one either way), then it is waited for.
      if (!r_.align_param_gather && b > 0 && same_set(buckets_[b - 1], k) && buckets_[b - 1].event == not_issued)
        gather(b - 1);
      e_.wait(compute_, k.event);
      k.event = waited;
    }
  }

  /// Behind the op of `micro_batch` that completes the gradients of the tensors `used_by` reads.
  void after_backward(int chunk, int holder, op_type used_by, int micro_batch) {
    if (micro_batch + 1 != micro_batches_) return;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      auto& k = buckets_[b];
      if (k.chunk != chunk || !holds(k, holder, used_by) || --k.missing != 0 || !r_.overlap_grad_reduce ||
          reduce_after_pipeline_)
        continue;
      e_.cross(compute_, dp_stream_);
      reduce(dp_stream_, b);
    }
  }

  /// After the backward: the reductions not yet issued, the embedding's, the optimizer.
  void epilogue() {
    if (!r_.overlap_grad_reduce)
      for (std::size_t b = 0; b < buckets_.size(); ++b) reduce(compute_, b);
    if (r_.overlap_grad_reduce && reduce_after_pipeline_)
      for (std::size_t b = 0; b < buckets_.size(); ++b) {
        e_.cross(compute_, dp_stream_);
        reduce(dp_stream_, b);
      }
    if (r_.overlap_grad_reduce && !buckets_.empty()) e_.cross(dp_stream_, compute_);
    if (embedding_) {
      const int grads = e_.buffer(gradients(embedding_of_, -1));
      e_.collective(compute_, {.type = op_type::embedding_grad_all_reduce}, collective::all_reduce, embedding_comm_,
                    embedding_parameters_ * grad_bytes_, {grads}, {grads});
    }
    // The optimizer reads the reduced buckets and the replicated tensors' own gradients, and
    // writes the bucket shards and the replicated tensors.
    // The optimizer's state is read and written.
    std::vector<int> reduced = tensor_buffers(replicated_, true), shards = tensor_buffers(replicated_, false);
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      reduced.push_back(e_.buffer(bucket_buffer(buffer_kind::reduced_gradients, buckets_[b])));
      shards.push_back(e_.buffer(bucket_buffer(buffer_kind::parameter_shard, buckets_[b])));
      const int state = e_.buffer(bucket_buffer(buffer_kind::optimizer_state, buckets_[b]));
      reduced.push_back(state);
      shards.push_back(state);
    }
    if (replicated_parameters_ > 0) {
      const int state = e_.buffer({.kind = buffer_kind::optimizer_state});
      reduced.push_back(state);
      shards.push_back(state);
    }
    std::int64_t updated = replicated_parameters_;
    for (int part = 0; part < 2; ++part)
      updated += dist_opt_ ? reduced_parameters_[part] / size_[part] : reduced_parameters_[part];
    // Adam reads and writes its state and reads the gradient and writes the parameter: about
    // 4 bytes more than its state per parameter of this rank's shard (or replica).
    e_.compute(compute_, {.type = op_type::optimizer_step}, 0, std::move(reduced), std::move(shards),
               (state_bytes_ + 4) * updated);
  }

 private:
  static constexpr int not_issued = -1, waited = -2;
  struct bucket_state {
    bucket packed;
    int chunk = 0, index = 0, part = 0;
    int missing = 0;  ///< uses whose last gradient is still to come
    int event = not_issued;
  };

  /// Sizes what the rank keeps through the step: each tensor's parameters and gradients (the
  /// tensors one op reads first share one buffer), and the optimizer's state of what it updates
  /// (state_bytes a parameter: Adam's master weights and two moments, optimizer_state.hpp), of
  /// each bucket's shard (the whole bucket without the distributed optimizer) and of the
  /// replicated tensors.
  void size_state(const dp_plan& plan) {
    std::vector<std::int64_t> held;  // bytes per buffer index
    const auto add = [&](const buffer& b, std::int64_t bytes) {
      const auto i = static_cast<std::size_t>(e_.buffer(b));
      if (held.size() <= i) held.resize(i + 1, 0);
      held[i] += bytes;
    };
    for (const auto& chunk : plan.chunks)
      for (const auto& t : chunk) {
        add(parameters(t.used_by, t.layer, t.expert), params_.kept_bytes(t.of, t.parameters));
        add(gradients(t.used_by, t.layer, t.expert), t.parameters * grad_bytes_);
      }
    for (std::size_t i = 0; i < held.size(); ++i)
      if (held[i] > 0) e_.buffer(e_.target().buffers[i], held[i]);
    for (const bucket_state& k : buckets_)
      e_.buffer(bucket_buffer(buffer_kind::optimizer_state, k),
                state_bytes_ * k.packed.parameters / (dist_opt_ ? size_[k.part] : 1));
    if (replicated_parameters_ > 0)
      e_.buffer({.kind = buffer_kind::optimizer_state}, state_bytes_ * replicated_parameters_);
  }

  static bool holds(const bucket_state& k, int holder, op_type used_by) {
    for (const auto& t : k.packed.tensors)
      if (t.holder == holder && t.used_by == used_by) return true;
    return false;
  }
  static bool same_set(const bucket_state& a, const bucket_state& b) { return a.chunk == b.chunk && a.part == b.part; }
  op_key key(op_type type, const bucket_state& k) const {
    return {.type = type, .at = {.chunk = k.chunk, .bucket = k.index}, .expert = k.part == 1};
  }
  static buffer bucket_buffer(buffer_kind kind, const bucket_state& k) {
    return {.kind = kind, .at = {.chunk = k.chunk, .bucket = k.index}, .expert = k.part == 1};
  }
  /// The parameters (or gradients) of the bucket's tensors: one buffer per use (see parameter_tensor).
  std::vector<int> tensors(const bucket_state& k, bool grads) { return tensor_buffers(k.packed.tensors, grads); }
  std::vector<int> tensor_buffers(const std::vector<parameter_tensor>& list, bool grads) {
    std::vector<int> out;
    for (const auto& t : list) {
      const int b =
          e_.buffer(grads ? gradients(t.used_by, t.layer, t.expert) : parameters(t.used_by, t.layer, t.expert));
      if (out.empty() || out.back() != b) out.push_back(b);
    }
    return out;
  }
  /// Gathers dispatched by the schedule (param_sync_func) rather than by the forward's uses: with
  /// align_param_gather in an interleaved pipeline.
  bool aligned() const { return r_.align_param_gather && chunks_ > 1; }
  /// Every bucket of chunk `c` not yet dispatched, as DistributedDataParallel::start_param_sync
  /// issues them: the dense groups', then the experts', each in bucket order.
  void gather_chunk(int c) {
    for (int part = 0; part < 2; ++part)
      for (std::size_t b = 0; b < buckets_.size(); ++b)
        if (buckets_[b].chunk == c && buckets_[b].part == part && buckets_[b].event == not_issued) gather(b);
  }
  void gather(std::size_t b) {
    auto& k = buckets_[b];
    const int stream = r_.overlap_param_gather ? dp_stream_ : compute_;
    e_.cross(compute_, stream);  // after the last optimizer write
    e_.collective(stream, key(op_type::dp_param_gather, k), collective::all_gather, comm_[k.part],
                  gathered_bytes(k.packed), {e_.buffer(bucket_buffer(buffer_kind::parameter_shard, k))},
                  tensors(k, false));
    k.event = r_.overlap_param_gather ? e_.record(dp_stream_) : waited;
  }
  /// What a bucket's parameter all-gather moves: each tensor as it is kept (parameter_storage.hpp).
  std::int64_t gathered_bytes(const bucket& k) const {
    std::int64_t bytes = 0;
    for (const parameter_tensor& t : k.tensors) bytes += params_.gathered_bytes(t.of, t.parameters);
    return bytes;
  }
  void reduce(int stream, std::size_t b) {
    auto& k = buckets_[b];
    e_.collective(stream, key(op_type::dp_grad_reduce, k),
                  dist_opt_ ? collective::reduce_scatter : collective::all_reduce, comm_[k.part],
                  k.packed.parameters * grad_bytes_, tensors(k, true),
                  {e_.buffer(bucket_buffer(buffer_kind::reduced_gradients, k))});
  }

  emitter& e_;
  int compute_, micro_batches_;
  const resolved_settings& r_;
  bool dist_opt_;
  parameter_storage params_;
  int grad_bytes_;
  std::optional<group> embedding_;
  std::int64_t embedding_parameters_;
  op_type embedding_of_;
  bool reduce_after_pipeline_;
  int pp_, stage_;
  std::int64_t state_bytes_;
  int chunks_;
  int comm_[2] = {-1, -1}, size_[2] = {1, 1};
  int embedding_comm_ = -1;
  std::int64_t reduced_parameters_[2] = {0, 0}, replicated_parameters_ = 0;
  std::vector<bucket_state> buckets_;
  std::vector<parameter_tensor> replicated_;  ///< tensors no group reduces
  int dp_stream_ = -1;
};

}  // namespace overlap::schedule::detail
