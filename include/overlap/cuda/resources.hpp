#pragma once
/// @file
/// What the trainer hands the executor: its NCCL communicators (by the program's communicator
/// name), one kernel per compute op type, one provider of every communication op's buffers,
/// optionally its own implementation of some communication types, and optionally its own
/// streams. The library never creates communicators: ranks, bootstrap and multi-node scale stay
/// NCCL's and the trainer's. Host only.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <overlap/cuda/api.hpp>
#include <overlap/cuda/bind.hpp>
#include <overlap/program/program.hpp>

namespace overlap::cuda {

/// The device memory of one communication op. Which side it needs, and how much, follows the op
/// (`bytes` is the program's full tensor, `n` the communicator's size):
///
/// | op             | `send_bytes` at least | `recv_bytes` at least |
/// |----------------|-----------------------|-----------------------|
/// | all_gather     | bytes / n             | bytes                 |
/// | reduce_scatter | bytes                 | bytes / n             |
/// | all_reduce     | bytes                 | bytes (may alias send)|
/// | all_to_all     | bytes (n equal parts) | bytes (n equal parts) |
/// | send           | bytes                 | not used              |
/// | recv           | not used              | bytes                 |
///
/// `dtype` sets NCCL's element type; the counts are bytes / its size, so a size the element does
/// not divide is rejected before launch.
template <executor_api Api>
struct basic_buffer {
  const void* send = nullptr;
  std::int64_t send_bytes = 0;
  void* recv = nullptr;
  std::int64_t recv_bytes = 0;
  typename Api::dtype_t dtype{};
};

/// Everything the trainer supplies; the executor takes it over (the communicators and streams
/// stay the trainer's to destroy, the executor only aborts communicators when its watchdog fires).
template <executor_api Api>
struct basic_resources {
  using stream_t = typename Api::stream_t;
  /// A compute op type's kernel: enqueues the work of the op with this key (its layer,
  /// micro-batch, chunk, split...) on the stream the program assigns.
  using kernel = std::function<void(const schedule::op_key&, stream_t)>;
  /// A communication op type issued by the trainer instead of NCCL (a DeepEP dispatch, a
  /// userbuffers GEMM with its exchange built in): called where the NCCL call would be, inside
  /// the op's NCCL group if it has one, with the whole op (bytes, communicator index, peer).
  using comm_override = std::function<void(const schedule::op&, stream_t)>;
  /// The buffers of one communication op. The op rather than only its key, so that a provider
  /// can size from `bytes` and tell collectives from p2p; ops with equal keys may share memory.
  using buffer_provider = std::function<basic_buffer<Api>(const schedule::op&)>;
  using kernel_table = op_type_table<kernel>;

  /// By `program::comms[i].name`; each must have the program's size and this rank's position.
  /// Only the communicators of ops that NCCL issues are needed (not those of overridden types).
  std::map<std::string, typename Api::comm_t, std::less<>> comms{};
  /// By compute op type; `kernels_for<Schedule>(on<...>(f), ...)` fills it with a compile-time
  /// check, `kernels[op_type::fc1_fprop] = f` one entry at a time.
  kernel_table kernels{};
  /// Called once per communication op that NCCL issues, in issue order, by the constructor (the
  /// pre-flight), never while a step runs: its answers are checked and kept. What it throws
  /// leaves the constructor, before anything is created.
  buffer_provider buffers{};
  /// By communication op type; empty entries (the default) go to NCCL. An overridden op needs
  /// no buffer and no communicator.
  op_type_table<comm_override> comm_overrides{};
  /// Empty: the executor creates one stream per `program::streams` entry with its priority. Else
  /// one borrowed stream per entry, in the same order.
  std::vector<stream_t> streams{};
};

}  // namespace overlap::cuda
