#pragma once
/// @file
/// What the trainer hands the executor: its NCCL communicators (by the program's communicator
/// name), its compute kernels (by compute op name), the buffers of every communication op (by
/// that op's name) and, optionally, its own streams. The library never creates communicators:
/// ranks, bootstrap and multi-node scale stay NCCL's and the trainer's. Host only.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <overlap/cuda/api.hpp>

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
  /// A compute op's kernel: enqueues its work on the stream the program assigns.
  using kernel = std::function<void(typename Api::stream_t)>;
  /// By `program::comms[i].name`; each must have the program's size and this rank's position.
  std::map<std::string, typename Api::comm_t, std::less<>> comms{};
  /// By compute op name.
  std::map<std::string, kernel, std::less<>> kernels{};
  /// By communication op name (ops with the same name share a buffer).
  std::map<std::string, basic_buffer<Api>, std::less<>> buffers{};
  /// Empty: the executor creates one stream per `program::streams` entry with its priority. Else
  /// one borrowed stream per entry, in the same order.
  std::vector<typename Api::stream_t> streams{};
};

}  // namespace overlap::cuda
