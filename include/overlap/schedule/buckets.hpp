#pragma once
/// @file
/// Data-parallel buckets as Megatron-Core's gradient buffer forms them: a model chunk's parameters
/// are separate tensors (QKV, projection, fc1, fc2, norms, router, experts, shared experts, the
/// embedding and the output layer), taken in reverse order (the order backward produces their
/// gradients) and packed into buckets of `bucket_size` parameters: a tensor is never split, and a
/// bucket closes as soon as it holds at least `bucket_size`. With `num_buckets` the limit is the
/// chunk's parameters divided by it; with neither, the whole chunk is one bucket. Dense and
/// expert parameters form separate buckets (they reduce over different groups).

#include <cstdint>
#include <optional>
#include <vector>

#include <overlap/program/op_key.hpp>

namespace overlap::schedule {

/// One parameter tensor of a rank's model chunk.
struct parameter_tensor {
  op_type of = op_type::none;   ///< what it is, named by its forward op (qkv_fprop, layernorm_fprop, ...)
  int holder = 0;               ///< what computes with it: a chunk-local index (see step.hpp)
  int layer = -1;               ///< its transformer layer; -1 for the embedding and output layer
  std::int64_t parameters = 0;  ///< this rank's share
  bool expert = false;
  /// The compute op that first reads it in the forward (a norm: the GEMM it is fused into, as in
  /// TE's LayerNormLinear): its parameters must be gathered before that op, and the op's weight
  /// gradient completes its gradient. Tensors with one `used_by` share parameter and gradient
  /// buffers.
  op_type used_by = op_type::none;
};

struct bucket {
  std::vector<parameter_tensor> tensors;  ///< in the order they were packed (reverse model order)
  std::int64_t parameters = 0;
  /// The holders whose tensors the bucket holds, highest first.
  std::vector<int> holders() const {
    std::vector<int> out;
    for (const auto& t : tensors)
      if (out.empty() || out.back() != t.holder) out.push_back(t.holder);
    return out;
  }
  /// How many (holder, used_by) uses its tensors have: the ops whose gradients complete it.
  int uses() const {
    int n = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i)
      n += i == 0 || tensors[i].holder != tensors[i - 1].holder || tensors[i].used_by != tensors[i - 1].used_by;
    return n;
  }
};

/// Packs the tensors of one group (`forward_order`: the chunk's tensors of that group in model
/// order) into buckets; bucket 0 holds the last tensors of the model.
inline std::vector<bucket> pack_buckets(const std::vector<parameter_tensor>& forward_order,
                                        std::optional<std::int64_t> bucket_size, std::optional<int> num_buckets) {
  std::int64_t total = 0;
  for (const auto& t : forward_order) total += t.parameters;
  std::int64_t limit = total;
  if (bucket_size && *bucket_size > 0) limit = *bucket_size;
  if (num_buckets && *num_buckets > 0) limit = (total + *num_buckets - 1) / *num_buckets;
  std::vector<bucket> out;
  for (auto t = forward_order.rbegin(); t != forward_order.rend(); ++t) {
    if (out.empty() || out.back().parameters >= limit) out.emplace_back();
    out.back().tensors.push_back(*t);
    out.back().parameters += t->parameters;
  }
  return out;
}

}  // namespace overlap::schedule
