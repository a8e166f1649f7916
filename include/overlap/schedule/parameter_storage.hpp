#pragma once
/// @file
/// How a rank keeps its model's parameters and what their all-gather moves. Bridge's
/// `fp8_param_gather` sets Megatron-Core's `fp8_param` with it (MixedPrecisionConfig keeps the
/// two equal), so in an fp8 run the model's linear weights are Transformer Engine quantized
/// tensors instead of bf16 ones:
/// - a per-tensor or blockwise recipe (delayed, tensorwise, blockwise): one byte a parameter (its
///   scales are a few bytes a tensor), kept in DistributedDataParallel's parameter buffer, which
///   `group_params_for_buffers` makes uint8 for them; the all-gather moves those bytes. Where the
///   GPU is not a declared Blackwell one, whose fp8 GEMMs take either layout, the backward needs
///   the weight transposed (Hopper's fp8 GEMMs are TN only): TE's Float8Tensor caches that
///   column-wise copy from the first micro-batch's use until the optimizer step, a byte more;
/// - MXFP8: TE's MXFP8 tensor keeps a row-wise and a column-wise copy of a byte each and an E8M0
///   scale per 32 elements of each, 2 + 1/16 bytes a parameter; with the distributed optimizer
///   the parameter all-gather runs in bf16 inside the gradient buffer (the `shared_buffer` of
///   param_and_grad_buffer.py), so it adds no buffer of its own and moves 2 bytes a parameter.
/// Quantized are the weights of Transformer Engine's linear modules (qkv, proj, fc1, fc2, the
/// experts' grouped linears, the shared experts', MTP's projection); the norms, the router, the
/// embedding and the output layer stay in the run's precision, as do all parameters without
/// `fp8_param_gather` or in a run without fp8. Not counted: TE's cached fp8 copies of bf16
/// weights in an fp8 run without fp8 parameters.

#include <cstdint>

#include <overlap/program/program.hpp>
#include <overlap/rules/facts.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

class parameter_storage {
 public:
  parameter_storage() = default;
  /// The storage of settings `s`'s parameters, `element_bytes` apiece in the run's precision;
  /// `mxfp8`: the fp8 recipe is MXFP8.
  constexpr parameter_storage(const settings& s, bool mxfp8, int element_bytes)
      : element_bytes_(element_bytes),
        format_(!s.fp8 || !s.fp8_param_gather ? format::native
                : mxfp8                       ? format::mxfp8
                : rules::blackwell(s)         ? format::fp8
                                              : format::fp8_transposed) {}

  /// Whether `of` (a tensor named by its forward op) is a TE linear module's weight.
  static constexpr bool te_linear(op_type of) {
    return of == op_type::qkv_fprop || of == op_type::proj_fprop || of == op_type::fc1_fprop ||
           of == op_type::fc2_fprop || of == op_type::experts_fprop || of == op_type::shared_experts_fprop ||
           of == op_type::mtp_proj_fprop;
  }
  /// Bytes `n` parameters of tensor `of` keep.
  constexpr std::int64_t kept_bytes(op_type of, std::int64_t n) const {
    if (!quantized(of)) return n * element_bytes_;
    return format_ == format::mxfp8 ? 2 * n + n / 16 : format_ == format::fp8_transposed ? 2 * n : n;
  }
  /// Bytes the all-gather of `n` parameters of tensor `of` moves.
  constexpr std::int64_t gathered_bytes(op_type of, std::int64_t n) const {
    if (!quantized(of)) return n * element_bytes_;
    return format_ == format::mxfp8 ? 2 * n : n;
  }

 private:
  enum class format { native, fp8, fp8_transposed, mxfp8 };
  constexpr bool quantized(op_type of) const { return format_ != format::native && te_linear(of); }
  int element_bytes_ = 2;
  format format_ = format::native;
};

}  // namespace overlap::schedule
