#pragma once
/// @file
/// Appending ops to one rank's program: what every family's builder shares, so that several
/// builders can write into one program (the composed step) without clashing on event, group or
/// stream numbers.

#include <string>
#include <utility>
#include <vector>

#include <overlap/schedule/program.hpp>

namespace overlap::schedule::detail {

class emitter {
 public:
  explicit emitter(program& p) : p_(p) {}

  program& target() { return p_; }
  int rank() const { return p_.rank; }

  /// Adds a stream and returns its index.
  int add_stream(stream_role role, int priority) {
    p_.streams.push_back({role, priority});
    return static_cast<int>(p_.streams.size()) - 1;
  }
  /// The communicator called `name` (added with `ranks` on first use).
  int comm(const std::string& name, const std::vector<int>& ranks) {
    for (std::size_t c = 0; c < p_.comms.size(); ++c)
      if (p_.comms[c].name == name) return static_cast<int>(c);
    p_.comms.push_back({name, ranks});
    return static_cast<int>(p_.comms.size()) - 1;
  }
  int new_group() { return groups_++; }
  int new_buffers(int count) {
    const int first = p_.num_buffers;
    p_.num_buffers += count;
    return first;
  }

  /// Appends `o`, after the deferred record of its stream (all of them before a host sync).
  void push(op o) {
    if (o.kind == op_kind::host_sync) {
      for (std::size_t s = 0; s < deferred_.size(); ++s) materialize(static_cast<int>(s));
    } else {
      materialize(o.stream);
    }
    p_.ops.push_back(std::move(o));
  }
  void compute(int stream, std::string name, double flops) {
    push({.kind = op_kind::compute, .stream = stream, .name = std::move(name), .flops = flops});
  }
  /// An event that completes with what `stream` has been given so far. Its record op is issued
  /// late: right before the next op on `stream`, or before the first wait for it. With one
  /// hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) a record issued right behind a long kernel
  /// would hold every later launch of every stream until that kernel ends; issued late it
  /// holds nothing that does not wait for the kernel anyway. A record no op waits for is dropped.
  int record(int stream) {
    materialize(stream);
    const int e = p_.num_events++;
    if (deferred_.size() <= static_cast<std::size_t>(stream)) deferred_.resize(stream + 1, -1);
    deferred_[stream] = e;
    return e;
  }
  void wait(int stream, int event) {
    for (std::size_t s = 0; s < deferred_.size(); ++s)
      if (deferred_[s] == event) materialize(static_cast<int>(s));
    push({.kind = op_kind::wait, .stream = stream, .event = event});
  }
  /// `to` waits for what `from` issued so far.
  void cross(int from, int to) { wait(to, record(from)); }

 private:
  void materialize(int stream) {
    if (static_cast<std::size_t>(stream) >= deferred_.size() || deferred_[stream] < 0) return;
    p_.ops.push_back({.kind = op_kind::record, .stream = stream, .event = deferred_[stream]});
    deferred_[stream] = -1;
  }

  program& p_;
  int groups_ = 0;
  std::vector<int> deferred_;  ///< per stream: the event whose record is not issued yet, or -1
};

}  // namespace overlap::schedule::detail
