#pragma once
/// @file
/// What the executor throws. Every message names the rank and, where one is at fault, the op
/// (its index in the program and its name), in the library's one format
/// `[ID] <what is wrong>; <how to fix>`. Host only: no CUDA or NCCL include.

#include <stdexcept>
#include <string>

namespace overlap::cuda {

/// The base of everything the executor throws: the rank, and the op at fault (-1: none).
class error : public std::runtime_error {
 public:
  error(const std::string& message, int rank, int op) : std::runtime_error(message), rank_(rank), op_(op) {}
  /// The global rank of the program being run.
  int rank() const noexcept { return rank_; }
  /// The index of the op at fault in `program::ops`, or -1 when no single op is.
  int op() const noexcept { return op_; }

 private:
  int rank_;
  int op_;
};

/// The program needs something the trainer did not supply (a communicator, a kernel, a buffer,
/// a stream), or something it supplied does not fit; thrown by the constructor, before anything
/// is launched.
class preflight_error : public error {
  using error::error;
};

/// A CUDA or NCCL call returned an error; the message carries the call, the error's name and
/// string, and NCCL's last error text where there is one.
class call_error : public error {
  using error::error;
};

/// The watchdog gave up: an NCCL communicator reported an asynchronous error, or the step did not
/// finish within the timeout. Every communicator of the program has been aborted by then, so the
/// executor (and the communicators) cannot be used any more.
class watchdog_error : public error {
  using error::error;
};

/// A program-level misuse that no trainer resource can fix: capturing a step with a host sync,
/// running after the communicators were aborted.
class usage_error : public error {
  using error::error;
};

}  // namespace overlap::cuda
