#pragma once
/// @file
/// The run-time sizes of a step: the model and the batch. The config type gives the layout and
/// the overlap families; a workload gives bytes and flops.

#include <cstdint>

#include <overlap/settings/enums.hpp>

namespace overlap::schedule {

struct workload {
  int layers = 8;              ///< transformer layers (of the whole model)
  int micro_batches = 4;       ///< per step and data-parallel rank
  int seq_length = 4096;
  int micro_batch_size = 1;
  int hidden = 4096;
  int ffn_hidden = 14336;      ///< SwiGLU: three h x ffn matrices
  int heads = 32;
  int vocab = 128256;
  int experts = 0;             ///< routed experts (0: dense)
  int top_k = 0;
  int moe_ffn_hidden = 0;
  dtype precision = dtype::bf16;

  constexpr int element_bytes() const { return precision == dtype::fp32 ? 4 : 2; }
  constexpr std::int64_t tokens() const {
    return std::int64_t{seq_length} * micro_batch_size;
  }
  /// Parameters of one dense layer: attention (4 h^2) and the SwiGLU MLP (3 h ffn).
  constexpr std::int64_t layer_parameters() const {
    return 4 * std::int64_t{hidden} * hidden + 3 * std::int64_t{hidden} * ffn_hidden;
  }
  /// Forward flops of one dense layer for one micro-batch: 2 flops per parameter and token, plus
  /// causal attention scores and values (2 x 2 x tokens x seq x h / 2).
  constexpr double layer_forward_flops() const {
    return 2.0 * static_cast<double>(tokens()) * static_cast<double>(layer_parameters()) +
           2.0 * static_cast<double>(tokens()) * seq_length * hidden;
  }
};

}  // namespace overlap::schedule
