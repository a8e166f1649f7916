#pragma once
/// @file
/// Memory a rank needs for a step, from its program's sized buffers (`program::buffer_bytes`).
/// So far the model state the rank keeps through the step: its parameters, their gradients
/// (fp32 with grad_reduce_in_fp32, else the step's precision) and the optimizer's state (Adam's
/// fp32 master weights and moments of what it updates: a shard of the data-parallel group's
/// buckets with the distributed optimizer, of the expert data-parallel group's for experts).
/// On a dense model with tp 1 this is Megatron-LM's compute_weight_and_optimizer_memory
/// (theoretical_memory_usage.py): 6 + 12 / dp bytes a parameter with the distributed optimizer,
/// 18 without, when gradients are reduced in fp32. With tp > 1 it divides the norms by tp as
/// well, which every tp rank holds whole: here they are counted whole. Activations and
/// communication buffers are not sized yet.

#include <cstddef>
#include <cstdint>

#include <overlap/program/program.hpp>

namespace overlap::sim {

struct model_state {
  std::int64_t weights = 0, gradients = 0, optimizer = 0;  ///< bytes
  constexpr std::int64_t total() const { return weights + gradients + optimizer; }
  friend constexpr bool operator==(const model_state&, const model_state&) = default;
};

/// The model state of the rank that runs `p`.
inline model_state model_state_of(const schedule::program& p) {
  model_state m;
  for (std::size_t i = 0; i < p.buffers.size() && i < p.buffer_bytes.size(); ++i) {
    const std::int64_t bytes = p.buffer_bytes[i];
    switch (p.buffers[i].kind) {
      case schedule::buffer_kind::parameters: m.weights += bytes; break;
      case schedule::buffer_kind::gradients: m.gradients += bytes; break;
      case schedule::buffer_kind::optimizer_state: m.optimizer += bytes; break;
      default: break;
    }
  }
  return m;
}

}  // namespace overlap::sim
