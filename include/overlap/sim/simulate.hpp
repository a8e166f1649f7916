#pragma once
/// @file
/// A discrete-event simulation of one step on a model of the machine (no GPU needed).
///
/// Per rank: a host thread issues ops in program order, paying `machine::launch_us` each (a record
/// or wait `machine::event_us`, where the machine says), and stops
/// at a host sync until what it waits for has finished (everything issued before it, or one
/// event: the alltoall dispatcher's token counts). Streams map round-robin onto
/// `cuda_device_max_connections` hardware queues; each queue is FIFO across its streams, so an op
/// whose dependencies are not met blocks every op behind it in that queue (with one connection,
/// the head-of-line blocking TP ordering relies on). An op starts when it is at its queue's head,
/// its predecessors on the rank (program/semantics.hpp: stream, communicator, event, group) are
/// done, and SMs are free: compute takes every free SM, communication kernels take `op::sms` (by default
/// `machine::comm_sms` for collectives, `machine::p2p_sms` for send/recv; none by copy engine) from
/// a running GEMM if need be (which then runs slower until it gets them back when the kernel
/// ends) and hold them from launch; a collective or send/recv transfers only
/// once every member of its rendezvous has launched. Kernels side by side share the GPU's memory
/// system: a transfer moves less beside compute (`machine::comm_interference`, by the SMs the
/// compute holds), and compute runs slower beside transfers (`machine::compute_interference`, by
/// the bytes they move in and out of its GPU). When nothing can move while ops remain, the
/// step hangs: the result says so and gives the wait-for graph.
///
/// The parts, one file each under engine/: the set-up (setup.hpp: each rank's state from its
/// program), the state they share (state.hpp), the SM pool (sm_pool.hpp: who holds which SMs),
/// the host issuer and hardware queues (issuer.hpp), the rendezvous and the link model
/// (rendezvous.hpp, links.hpp: transfers sharing links), the event loop (event_loop.hpp, with its
/// fast paths behind `options::fast_paths`) and the summary (summary.hpp: intervals, exposure,
/// wait-for graph).

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/program/rendezvous.hpp>
#include <overlap/program/semantics.hpp>
#include <overlap/sim/cost/analytic.hpp>  // the model the presets drive, for callers
#include <overlap/sim/cost/cost_model.hpp>
#include <overlap/sim/engine/event_loop.hpp>
#include <overlap/sim/engine/issuer.hpp>
#include <overlap/sim/engine/large_array.hpp>
#include <overlap/sim/engine/links.hpp>
#include <overlap/sim/engine/rendezvous.hpp>
#include <overlap/sim/engine/setup.hpp>
#include <overlap/sim/engine/sm_pool.hpp>
#include <overlap/sim/engine/state.hpp>
#include <overlap/sim/engine/summary.hpp>
#include <overlap/sim/engine/timer_queue.hpp>
#include <overlap/sim/result.hpp>

namespace overlap::sim {

class workspace;

struct options {
  /// The hardware queues the streams share. 0: what the programs say
  /// (`program::cuda_device_max_connections`, the config's resolved setting; programs that say
  /// different ones are refused), and CUDA's default of 8 where none says.
  int cuda_device_max_connections = 0;
  /// No contention for SMs: every compute kernel gets the whole GPU and communication kernels
  /// none. What is left is the dependencies (hardware-queue order included) and the host's issue
  /// cost: the step time is then the critical path (see bound.hpp).
  bool unlimited_resources = false;
  /// When set, `programs` holds a subset of the step: each absent rank runs as its class
  /// representative does (program/rank_classes.hpp; `class_problems` must be empty), so a
  /// rendezvous starts once its present members have launched. Not owned.
  const schedule::rank_classes* classes = nullptr;
  /// When set, the simulation keeps its per-op state in this memory, reused from the last call
  /// (see `workspace`). Not owned.
  workspace* reuse = nullptr;
  /// False: the result leaves `intervals` empty (its times and exposure are the same). A sweep
  /// that compares steps by their times needs no per-op record of each.
  bool intervals = true;
  /// False: the event loop runs every event through its queue, without the fast paths that run
  /// a rank ahead on its own where no other rank can change it (engine/event_loop.hpp). The
  /// results are the same bit for bit; this is for checking that they are.
  bool fast_paths = true;
};

namespace detail {

class workspace_lease;

}  // namespace detail

/// Memory that `simulate` keeps from one call to the next (`options::reuse`): its per-op state
/// and event queue. A step of millions of ops otherwise takes that memory fresh from the system
/// on every call, which costs more than simulating on it (the kernel zeroes it page by page). A
/// caller that simulates many steps keeps one per thread; a workspace serves one simulation at a
/// time (`simulate` refuses one in use). It holds what the largest step simulated in it needed
/// until it is destroyed.
class workspace {
 public:
  workspace() = default;
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;

 private:
  friend class detail::workspace_lease;
  std::atomic<bool> in_use_{false};
  std::vector<detail::rank_state> ranks_;
  detail::op_arrays arrays_;
  detail::timer_queue timers_{0};
};

namespace detail {

/// The memory of one simulation: the caller's workspace, taken for the call (refused when
/// another simulation holds it), or its own.
class workspace_lease {
 public:
  explicit workspace_lease(sim::workspace* shared) : shared_(shared), w_(shared ? *shared : own_) {
    if (shared_ && shared_->in_use_.exchange(true))
      throw std::invalid_argument(
          "simulate: options::reuse names a workspace another simulation is using; "
          "give each thread its own");
  }
  workspace_lease(const workspace_lease&) = delete;
  workspace_lease& operator=(const workspace_lease&) = delete;
  ~workspace_lease() {
    if (shared_) shared_->in_use_.store(false);
  }
  /// `count` rank states, emptied (their storage kept).
  std::vector<rank_state>& ranks(std::size_t count) {
    if (w_.ranks_.size() > count) w_.ranks_.resize(count);
    for (rank_state& rs : w_.ranks_) recycle(rs);
    w_.ranks_.resize(count);
    return w_.ranks_;
  }
  /// The per-op arrays, empty, with room for `ops` ops.
  op_arrays& arrays(std::size_t ranks, std::size_t ops) {
    w_.arrays_.clear(ranks);
    w_.arrays_.ops.reserve(ops);
    w_.arrays_.queue_ops.reserve(ops);
    w_.arrays_.succ.reserve(2 * ops);  // most ops have one or two successors
    return w_.arrays_;
  }
  /// The event queue, empty, for `ids` timers.
  timer_queue& timers(std::size_t ids) {
    w_.timers_.reset(ids);
    return w_.timers_;
  }

 private:
  sim::workspace* shared_;
  sim::workspace own_;  ///< when the caller gives none
  sim::workspace& w_;
};

}  // namespace detail
/// Simulates one step: `programs` holds one program per rank (or, with `options::classes`, per
/// representative). Throws std::invalid_argument for a
/// step `verify` rejects as malformed (the first problem), a machine the loop cannot run, and a
/// cost that is not a finite time >= 0 (naming the rank, the op and the value). Ranks that
/// disagree on a rendezvous (a collective's kind or size, a send's size) never start it: a hang,
/// with the disagreement in the wait-for graph, as on NCCL.
inline result simulate(const std::vector<schedule::program>& programs, const cost_model& cost,
                       const options& opt = {}) {
  const machine& m = cost.machine();
  const int connections = detail::connections_of(programs, opt.cuda_device_max_connections);
  detail::check_machine(m);  // before the set-up asks the cost model of it

  // Each rank is checked, ordered and set up in one pass over its ops (build_rank), which also
  // lists its communication ops for the rendezvous matching.
  detail::workspace_lease memory(opt.reuse);
  std::vector<detail::rank_state>& ranks = memory.ranks(programs.size());
  std::vector<std::size_t> timer_base(programs.size());  // rank's timer id of its op 0 (a compute op's end)
  std::size_t total_ops = 0;
  for (const schedule::program& p : programs) total_ops += p.ops.size();
  detail::op_arrays& arrays = memory.arrays(programs.size(), total_ops);
  std::vector<std::uint32_t> successor_starts, successors;  // build_rank's scratch, one rank after another
  detail::whole_gpu_times whole_gpu(cost);
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const schedule::program& p = programs[pi];
    timer_base[pi] = arrays.ops.size();
    detail::build_rank(ranks[pi], p, std::max<std::size_t>(1, std::min<std::size_t>(p.streams.size(), connections)),
                       m.sms, whole_gpu, arrays, arrays.communication[pi], successor_starts, successors);
  }
  if (const auto problems = schedule::step_problems(programs); !problems.empty())
    throw std::invalid_argument("simulate: rank " + std::to_string(problems.front().rank) + ": " +
                                problems.front().reason + " (verify::verify lists every problem)");
  if (opt.classes)
    if (const std::string problem = schedule::class_problems(programs, *opt.classes); !problem.empty())
      throw std::invalid_argument("simulate: " + std::string(schedule::class_problem_lead) + problem);
  const schedule::rendezvous_set matched = schedule::match_rendezvous(
      programs, {.explain = false, .absent_by_design = opt.classes != nullptr, .communication = &arrays.communication});
  const std::size_t groups = matched.groups.size();
  if (groups >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::length_error("simulate: " + std::to_string(groups) +
                            " rendezvous do not fit the event loop's 32-bit ids");

  const std::size_t timer_count = total_ops + groups + 2 * programs.size();
  detail::step_context context{.programs = programs,
                               .cost = cost,
                               .m = m,
                               .opt = opt,
                               .ranks = ranks,
                               .arrays = arrays,
                               .timers = memory.timers(timer_count),
                               .timer_base = std::move(timer_base),
                               .total_ops = total_ops,
                               .groups = groups,
                               .group_timers = total_ops,
                               .wake_timers = total_ops + groups,
                               .resume_timers = total_ops + groups + programs.size()};
  detail::rendezvous rendezvous(context, matched, opt.classes, opt.unlimited_resources);
  detail::sm_pool sms(context);
  detail::issuer host(context, sms, rendezvous, opt.unlimited_resources);
  detail::event_loop(context, sms, rendezvous, host, opt.unlimited_resources, opt.fast_paths).run();
  return detail::summarize(programs, ranks, rendezvous, total_ops, opt.intervals);
}

/// Simulates the step that the representatives' programs `representatives` stand for (see
/// `options::classes`): the same step time, exposed communication and, for each representative,
/// intervals as the full step's. Throws std::invalid_argument as `class_problems` says when they
/// cannot stand for it.
inline result simulate(const std::vector<schedule::program>& representatives, const cost_model& cost,
                       const schedule::rank_classes& classes, options opt = {}) {
  opt.classes = &classes;
  return simulate(representatives, cost, opt);
}

}  // namespace overlap::sim
