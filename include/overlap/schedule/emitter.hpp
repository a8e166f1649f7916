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

  void push(op o) { p_.ops.push_back(std::move(o)); }
  void compute(int stream, std::string name, double flops) {
    push({.kind = op_kind::compute, .stream = stream, .name = std::move(name), .flops = flops});
  }
  int record(int stream) {
    const int e = p_.num_events++;
    push({.kind = op_kind::record, .stream = stream, .event = e});
    return e;
  }
  void wait(int stream, int event) { push({.kind = op_kind::wait, .stream = stream, .event = event}); }
  /// `to` waits for what `from` issued so far.
  void cross(int from, int to) { wait(to, record(from)); }

 private:
  program& p_;
  int groups_ = 0;
};

}  // namespace overlap::schedule::detail
