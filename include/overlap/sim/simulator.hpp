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
/// once every member of its rendezvous has launched. When nothing can move while ops remain, the
/// step hangs: the result says so and gives the wait-for graph.

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/program/rendezvous.hpp>
#include <overlap/program/semantics.hpp>
#include <overlap/sim/cost_model.hpp>
#include <overlap/sim/large_array.hpp>
#include <overlap/sim/result.hpp>
#include <overlap/sim/timer_queue.hpp>

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
};

namespace detail {

class workspace_lease;

inline constexpr double never = std::numeric_limits<double>::infinity();

enum class state : unsigned char { pending, issued, launched, running, done };

/// A compute op running now: its SMs, the share of its work done by `since`, its duration on its
/// current SMs (when they change, the rest takes what the cost model says for the new count) and
/// the time of one of its waves on them (0: not in waves; below 0: not asked for yet, as only a
/// communication kernel looking for SMs needs it).
struct computing {
  std::size_t op = 0;
  int sms = 0;
  double done = 0, since = 0, duration = 0, wave = -1;
};

/// What the event loop keeps of one op: everything it reads on the op's way through the loop in
/// one record (the ranks advance together, so an op's fields are rarely in cache; one record is
/// one or two cache lines to fetch, where one array per field would be one each).
struct op_state {
  /// Compute: kernel start; comm: transfer start. Before that, from its issue, when the host
  /// issued it (an op is at its queue's head, where only that time is asked, before it starts).
  double start = never;
  double end = never;
  /// Compute: its time on all of the GPU's SMs, as the cost model gives it (not checked yet): what
  /// it runs on unless communication kernels hold SMs, asked in the set-up while the op is in cache.
  double whole_us = 0;
  std::int32_t group = -1;      ///< comm: its rendezvous group, or -1
  std::uint32_t waiting = 0;    ///< predecessors (program/semantics.hpp) not done yet
  /// The ops that wait for it: op_arrays::succ[succ_begin .. succ_end) (indices on its rank).
  std::uint32_t succ_begin = 0;
  std::uint32_t succ_end = 0;
  int sms = 0;  ///< comm: the SMs its kernel holds
  std::int32_t stream = 0;  ///< the program's, for the result
  std::uint16_t queue = 0;  ///< its hardware queue
  schedule::op_kind kind = schedule::op_kind::compute;
  schedule::family family = schedule::family::none;
  state now = state::pending;
};

/// One hardware queue of a rank: its ops are queue_ops[next .. end), the head at `next`.
struct hardware_queue {
  std::uint32_t next = 0, end = 0;
  /// Whether its head may have become able to start since it was last looked at (it was issued,
  /// its last predecessor finished, SMs freed up, or a wake-up came): only those heads are looked
  /// at, not every head on every event.
  bool examine = false;
};

/// The per-op arrays of every rank, one array each, rank after rank: a rank's are slices of them.
/// One allocation each, not one per rank: large enough for huge pages (large_array.hpp), and a
/// workspace keeps them whole.
struct op_arrays {
  large_vector<op_state> ops;
  large_vector<std::uint32_t> succ;  ///< each op's successors (`rank_order::successors`), op after op
  large_vector<std::uint32_t> queue_ops;  ///< each rank's hardware queues' ops (see rank_state)
  /// Per rank, its communication ops in issue order (what the rendezvous are matched from).
  std::vector<std::vector<std::uint32_t>> communication;
  void clear(std::size_t ranks) {
    ops.clear();
    succ.clear();
    queue_ops.clear();
    communication.resize(ranks);
    for (auto& list : communication) list.clear();
  }
};

/// One rank's state.
struct rank_state {
  std::span<op_state> ops;  ///< in issue order
  /// The hardware queues' ops in issue order, queue after queue (indices on the rank).
  std::span<std::uint32_t> queue_ops;
  std::vector<hardware_queue> queues;
  std::size_t examining = 0;  ///< queues whose `examine` is set
  std::vector<std::size_t> sm_waiters;      ///< queues whose head waits for SMs
  std::vector<computing> running;           ///< compute ops now running, in start order
  std::vector<std::size_t> queue_order;     ///< hardware queues in dispatch order
  bool fixed_order = true;  ///< one stream per queue: the order never changes, it is sorted once
  std::size_t next_issue = 0;
  double host_time = 0;
  int free_sms = 0;
  /// Communication ops launched and not done: while there are none, no other rank can change
  /// this one's state, so it runs ahead on its own (see `simulate`).
  std::uint32_t comm_active = 0;
  bool ahead = false;      ///< running ahead: its timers are `running`'s ends and `wake_at`
  double wake_at = never;  ///< its wake-up while running ahead
  /// It stopped running ahead before launching a communication op: its dispatch goes on from
  /// queue_order[resume_index] (that queue to be looked at again), with `progressed` as it was,
  /// once the other ranks have reached that time.
  bool suspended = false;
  bool resume_progressed = false;
  std::size_t resume_index = 0;
};

/// `rs` emptied for another program, keeping its vectors' storage.
inline void recycle(rank_state& rs) {
  rank_state fresh;  // every other field as a new one has it
  const auto keep = [](auto& from, auto& to) {
    to.swap(from);
    to.clear();
  };
  keep(rs.queues, fresh.queues);
  keep(rs.sm_waiters, fresh.sm_waiters);
  keep(rs.running, fresh.running);
  keep(rs.queue_order, fresh.queue_order);
  rs = std::move(fresh);
}

/// Sorts intervals ((start, end) pairs) and merges overlapping ones, dropping empty ones.
inline void merge(std::vector<std::pair<double, double>>& v) {
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  std::size_t n = 0;
  for (const auto& x : v) {
    if (x.second <= x.first) continue;
    if (n > 0 && x.first <= v[n - 1].second) v[n - 1].second = std::max(v[n - 1].second, x.second);
    else v[n++] = x;
  }
  v.resize(n);
}

/// Adds interval [s, e) to `v`, to be merged: into its last interval when it starts inside it or
/// where it ends, as `merge` would join them (intervals that come in start order, as one stream's
/// ops do, then stay few); empty ones are dropped, and any out of order left to `merge`.
inline void add_interval(std::vector<std::pair<double, double>>& v, double s, double e) {
  if (e <= s) return;
  if (!v.empty() && v.back().first <= s && s <= v.back().second) v.back().second = std::max(v.back().second, e);
  else v.emplace_back(s, e);
}

/// Length of `a` outside `b`, both merged (see `merge`).
inline double uncovered(const std::vector<std::pair<double, double>>& a,
                        const std::vector<std::pair<double, double>>& b) {
  double total = 0;
  std::size_t j = 0;
  for (const auto& [s, e] : a) {
    double covered = 0;
    while (j < b.size() && b[j].second <= s) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < e; ++k)
      covered += std::min(e, b[k].second) - std::max(s, b[k].first);
    total += (e - s) - covered;
  }
  return total;
}

inline double length(const std::vector<std::pair<double, double>>& merged) {
  double total = 0;
  for (const auto& [s, e] : merged) total += e - s;
  return total;
}

/// The links a communication op of kind `kind` loads, as indices into its rank's four (0 NVLink
/// out, 1 NVLink in, 2 network out, 3 network in): a send the outgoing one, a receive the incoming
/// one, a collective both; the network's when its transfer leaves the node (`crosses_nodes`). The
/// simulator shares these links; the lower bound sums their busy time.
template <class F>
void for_each_link(schedule::op_kind kind, bool crosses_nodes, F f) {
  const std::size_t base = crosses_nodes ? 2 : 0;
  if (kind != schedule::op_kind::recv) f(base);
  if (kind != schedule::op_kind::send) f(base + 1);
}
/// The same for communication op `o` of `p`.
template <class F>
void for_each_link(const schedule::program& p, const schedule::op& o, int gpus_per_node, F f) {
  for_each_link(o.kind, schedule::crosses_nodes(p, o, gpus_per_node), f);
}

/// A cost model gave op `i` of `p` a time that is not finite and >= 0.
[[noreturn]] inline void bad_cost(const schedule::program& p, std::size_t i, double us) {
  throw std::invalid_argument("simulate: the cost model gives rank " + std::to_string(p.rank) + " op " +
                              std::to_string(i) + " (" + schedule::display_name(p.ops[i]) + ") " + std::to_string(us) +
                              " us; a cost must be finite and >= 0");
}

/// The hardware queues of a simulation: the caller's, else the one the programs state (they must
/// agree), else CUDA's default of 8.
inline int connections_of(const std::vector<schedule::program>& programs, const options& opt) {
  if (opt.cuda_device_max_connections < 0)
    throw std::invalid_argument("simulate: options::cuda_device_max_connections is " +
                                std::to_string(opt.cuda_device_max_connections) + "; give 1 or more, or 0 for the "
                                "programs' own");
  if (opt.cuda_device_max_connections > 0) return opt.cuda_device_max_connections;
  int stated = 0;
  for (const schedule::program& p : programs) {
    if (p.cuda_device_max_connections < 0)
      throw std::invalid_argument("simulate: rank " + std::to_string(p.rank) + " states cuda_device_max_connections " +
                                  std::to_string(p.cuda_device_max_connections) + "; 1 or more, or 0 for none");
    if (p.cuda_device_max_connections == 0) continue;
    if (stated != 0 && stated != p.cuda_device_max_connections)
      throw std::invalid_argument("simulate: the programs state different CUDA_DEVICE_MAX_CONNECTIONS (" +
                                  std::to_string(stated) + " and " + std::to_string(p.cuda_device_max_connections) +
                                  " on rank " + std::to_string(p.rank) + "); the model has one for the step: pass "
                                  "options::cuda_device_max_connections");
    stated = p.cuda_device_max_connections;
  }
  return stated > 0 ? stated : 8;
}

/// What the event loop itself reads of the machine (the cost model reads the rest), and its
/// clocks, which scale every compute cost.
inline void check_machine(const machine& m) {
  if (m.sms < 1 || m.comm_sms < 0 || m.p2p_sms < 0 || !std::isfinite(m.launch_us) || m.launch_us < 0 ||
      !std::isfinite(m.event_us) || m.event_us < 0)
    throw std::invalid_argument("simulate: the machine needs sms >= 1, comm_sms and p2p_sms >= 0 and a finite "
                                "launch_us and event_us >= 0 (it has sms " + std::to_string(m.sms) + ", comm_sms " +
                                std::to_string(m.comm_sms) + ", p2p_sms " + std::to_string(m.p2p_sms) +
                                ", launch_us " + std::to_string(m.launch_us) + ", event_us " +
                                std::to_string(m.event_us) + ")");
  const auto clock = [](double mhz) { return std::isfinite(mhz) && mhz >= 0; };
  if (!clock(m.benchmark_clock_mhz) || !clock(m.sustained_clock_mhz))
    throw std::invalid_argument("simulate: the machine's benchmark_clock_mhz and sustained_clock_mhz must be finite "
                                "and >= 0, 0 for none (it has " + std::to_string(m.benchmark_clock_mhz) + " and " +
                                std::to_string(m.sustained_clock_mhz) + ")");
}

/// Compute ops' times on the whole GPU (`cost_model::compute_us` on all its SMs), as the set-up asks
/// for every op: under the analytic model, which reads only an op's `compute_inputs`, ops of one
/// shape (every layer's and micro-batch's GEMMs) are asked once, through a small direct-mapped
/// table; a derived model is asked for every op.
class whole_gpu_times {
 public:
  explicit whole_gpu_times(const cost_model& cost) : cost_(cost), reuse_(cost.analytic_compute()) {}
  double of(const schedule::op& o) {
    if (!reuse_) return cost_.compute_us(o, cost_.machine().sms);
    const cost_model::compute_inputs in = cost_model::compute_inputs_of(o);
    const auto mix = [](std::uint64_t h, auto x) {
      return (h ^ static_cast<std::uint64_t>(x)) * 0x9e3779b97f4a7c15ull;
    };
    const std::uint64_t h =
        mix(mix(mix(mix(mix(static_cast<std::uint64_t>(in.type), in.m), in.n), in.k), in.memory_bytes), in.flops);
    entry& e = table_[h >> 56];
    if (!e.known || !(e.in == in)) e = {in, cost_.compute_us(o, cost_.machine().sms), true};
    return e.us;
  }

 private:
  struct entry {
    cost_model::compute_inputs in;
    double us = 0;
    bool known = false;
  };
  const cost_model& cost_;
  bool reuse_;
  std::array<entry, 256> table_{};
};

/// Builds `rs` for program `p` with `queues` hardware queues in one pass over its ops, which checks
/// them (`structure_check`: throws std::invalid_argument with the first problem), orders them
/// (`rank_order`) and writes the loop's record of each: its kind, queue and time on the whole GPU,
/// its predecessor count and successor list. The records are appended to `all` (whose `ops` and
/// `queue_ops` must have room for p's ops: the rank's spans point into them), its communication
/// ops to `communication`. `starts` and `to` are scratch (each op's successors), which the ranks
/// share.
inline void build_rank(rank_state& rs, const schedule::program& p, std::size_t queues, int sms, whole_gpu_times& times,
                       op_arrays& all, std::vector<std::uint32_t>& communication, std::vector<std::uint32_t>& starts,
                       std::vector<std::uint32_t>& to) {
  const std::size_t n = p.ops.size();
  if (n >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("simulate: rank " + std::to_string(p.rank) + " has " + std::to_string(n) +
                            " ops; the event loop indexes them in 32 bits");
  if (queues > std::numeric_limits<std::uint16_t>::max())
    throw std::length_error("simulate: rank " + std::to_string(p.rank) + " maps its streams onto " +
                            std::to_string(queues) + " hardware queues; the event loop indexes at most 65535");
  rs.queues.assign(queues, {});
  schedule::structure_check check(p);
  const auto reject = [&] {
    const schedule::structure_problem& first = check.problems().front();
    throw std::invalid_argument("simulate: rank " + std::to_string(p.rank) + " op " + std::to_string(first.op) + ": " +
                                first.text + " (verify::verify lists every problem)");
  };
  if (!check.problems().empty()) reject();
  const std::size_t first = all.ops.size();
  const schedule::rank_order order(p, [&](std::size_t i) {
    if (!check.accepts(i)) reject();
    const schedule::op& o = p.ops[i];
    op_state& s = all.ops.emplace_back();
    s.kind = o.kind;
    s.stream = o.stream;
    s.family = o.family();
    if (o.kind == schedule::op_kind::compute) s.whole_us = times.of(o);
    if (schedule::is_communication(o.kind)) communication.push_back(static_cast<std::uint32_t>(i));
    if (o.kind != schedule::op_kind::host_sync) {
      s.queue = static_cast<std::uint16_t>(static_cast<std::size_t>(o.stream) % queues);
      ++rs.queues[s.queue].end;  // its size, for now
    }
  });
  rs.ops = std::span<op_state>(all.ops).subspan(first, n);
  order.successors(starts, to);
  const std::size_t base = all.succ.size();
  if (base + to.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("simulate: the step has " + std::to_string(base + to.size()) +
                            " predecessor links; the event loop indexes them in 32 bits");
  all.succ.insert(all.succ.end(), to.begin(), to.end());
  for (std::size_t i = 0; i < n; ++i) {
    op_state& s = rs.ops[i];
    s.waiting = static_cast<std::uint32_t>(order.predecessors(i).size());
    s.succ_begin = static_cast<std::uint32_t>(base + starts[i]);
    s.succ_end = static_cast<std::uint32_t>(base + starts[i + 1]);
  }
  std::uint32_t at = 0;
  for (hardware_queue& q : rs.queues) {
    q.next = at;
    at += q.end;
    q.end = q.next;  // filled below
  }
  const std::size_t queued = all.queue_ops.size();
  all.queue_ops.resize(queued + at);
  rs.queue_ops = std::span<std::uint32_t>(all.queue_ops).subspan(queued, at);
  for (std::size_t i = 0; i < n; ++i)
    if (rs.ops[i].kind != schedule::op_kind::host_sync) rs.queue_ops[rs.queues[rs.ops[i].queue].end++] = static_cast<std::uint32_t>(i);
  rs.free_sms = sms;
  rs.fixed_order = p.streams.size() <= queues;
  if (rs.fixed_order) {  // queue q holds stream q
    for (std::size_t q = 0; q < queues; ++q) rs.queue_order.push_back(q);
    std::stable_sort(rs.queue_order.begin(), rs.queue_order.end(), [&](std::size_t a, std::size_t b) {
      return a < p.streams.size() && b < p.streams.size() && p.streams[a].priority < p.streams[b].priority;
    });
  }
}

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
      throw std::invalid_argument("simulate: options::reuse names a workspace another simulation is using; "
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
  using detail::never;
  using detail::state;
  using schedule::op_kind;
  const machine& m = cost.machine();
  const int connections = detail::connections_of(programs, opt);
  detail::check_machine(m);  // before the set-up asks the cost model of it
  const double event_us = m.event_us > 0 ? m.event_us : m.launch_us;  // a record's or wait's host cost

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
    detail::build_rank(ranks[pi], p, std::max<std::size_t>(1, std::min<std::size_t>(p.streams.size(), connections)), m.sms,
                       whole_gpu, arrays, arrays.communication[pi], successor_starts, successors);
  }
  if (const auto problems = schedule::step_problems(programs); !problems.empty())
    throw std::invalid_argument("simulate: rank " + std::to_string(problems.front().rank) + ": " +
                                problems.front().reason + " (verify::verify lists every problem)");
  if (opt.classes)
    if (const std::string problem = schedule::class_problems(programs, *opt.classes); !problem.empty())
      throw std::invalid_argument("simulate: " + std::string(schedule::class_problem_lead) + problem);
  // A cost must be a finite time: NaN would stall the event loop, a negative one run time back.
  const auto checked = [&](double us, std::size_t pi, std::size_t i) {
    if (!(us >= 0 && us < never)) [[unlikely]]  // NaN fails both
      detail::bad_cost(programs[pi], i, us);
    return us;
  };
  const schedule::rendezvous_set matched =
      schedule::match_rendezvous(programs, {.explain = false, .communication = &arrays.communication});
  const std::size_t groups = matched.groups.size();
  if (groups >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::length_error("simulate: " + std::to_string(groups) + " rendezvous do not fit the event loop's 32-bit ids");
  // Unmatched ops keep group -1 and never complete; so does a group with a missing member.
  for (std::size_t g = 0; g < groups; ++g)
    for (const auto& member : matched.groups[g]) ranks[member.program].ops[member.op].group = static_cast<std::int32_t>(g);
  // A group starts with every member present; with classes, absent members are their
  // representatives, present members of the group (class_problems).
  std::vector<char> present;
  if (opt.classes) {
    present.assign(static_cast<std::size_t>(opt.classes->world()), 0);
    for (const schedule::program& p : programs) present[static_cast<std::size_t>(p.rank)] = 1;
  }
  // How many peers of a communication op sit on another node; a collective's count depends on
  // its rank and communicator only, so it is worked out once per pair.
  std::vector<std::vector<int>> off_node(programs.size());
  for (std::size_t pi = 0; pi < programs.size(); ++pi) off_node[pi].assign(programs[pi].comms.size(), -1);
  const auto off_node_peers = [&](std::size_t pi, const schedule::op& o) {
    if (o.kind != op_kind::collective) return schedule::off_node_peers(programs[pi], o, m.gpus_per_node);
    int& known = off_node[pi][static_cast<std::size_t>(o.comm)];
    if (known < 0) known = schedule::off_node_peers(programs[pi], o, m.gpus_per_node);
    return known;
  };
  // Events of one time run in (rank, op) order, a rank's wake-up after its ops; a transfer's end
  // at its first member's place (its members then join the order one by one).
  constexpr std::size_t wake = std::numeric_limits<std::uint32_t>::max();
  const auto order_of = [](std::size_t pi, std::size_t i) { return std::uint64_t{pi} << 32 | i; };
  // Per group: its members' expected count, its placement, the links its transfer loads
  // (links[link_begin[g] .. link_begin[g + 1]); per rank, NVLink out and in, network out and in,
  // as detail::for_each_link says) and its place among simultaneous events.
  std::vector<int> expected_size(groups, 0), launched(groups, 0);
  std::vector<std::uint64_t> group_order(groups, std::numeric_limits<std::uint64_t>::max());
  std::vector<placement> where(groups);
  std::vector<std::size_t> link_begin(groups + 1, 0), links;
  for (std::size_t g = 0; g < groups; ++g) {
    const auto& first = matched.groups[g].front();
    const schedule::op& o = programs[first.program].ops[first.op];
    const std::vector<int>& members = programs[first.program].comms[static_cast<std::size_t>(o.comm)].ranks;
    const int size = o.kind == op_kind::collective ? static_cast<int>(members.size()) : 2;
    expected_size[g] = o.kind == op_kind::collective && opt.classes
                           ? static_cast<int>(std::count_if(members.begin(), members.end(),
                                                            [&](int r) { return present[static_cast<std::size_t>(r)] != 0; }))
                           : size;
    where[g] = placement{size, 0};
    for (const auto& mem : matched.groups[g]) {
      const schedule::op& mo = programs[mem.program].ops[mem.op];
      const int off = off_node_peers(mem.program, mo);
      where[g].off_node_peers = std::max(where[g].off_node_peers, off);
      if (!opt.unlimited_resources)
        detail::for_each_link(mo.kind, off > 0, [&](std::size_t l) { links.push_back(4 * mem.program + l); });
      group_order[g] = std::min(group_order[g], order_of(mem.program, mem.op));
    }
    link_begin[g + 1] = links.size();
  }

  // Links: the transfers in flight on a link share it equally: a transfer progresses at the
  // smallest share among its links, and its end moves whenever a transfer on one of them starts
  // or ends.
  struct transfer {
    double work = 0;   ///< the bandwidth part of its time, at the full rate
    double left = 0;   ///< of which left, in microseconds at the full rate
    double rate = 1;   ///< its share now
    double since = 0;  ///< when `left` was last brought up to date (or its latency ends)
    double end = never;
    bool in_flight = false;  ///< on its links
  };
  std::vector<transfer> transfers(groups);
  std::vector<std::vector<std::size_t>> on_link(4 * programs.size());  // groups in flight per link
  const auto links_of = [&](std::size_t g) {
    return std::span<const std::size_t>(links.data() + link_begin[g], link_begin[g + 1] - link_begin[g]);
  };

  // Timers: a compute op's end (rank's timer_base + op), a transfer's end (total_ops + group),
  // a rank's wake-up (total_ops + groups + rank: the host's issue of a queue head comes due, or a
  // GEMM's wave ends) and a suspended rank's resumption (after those: see run_ahead). A rank
  // running ahead keeps its own instead.
  detail::timer_queue& timers = memory.timers(total_ops + groups + 2 * programs.size());
  const std::size_t group_timers = total_ops, wake_timers = total_ops + groups,
                    resume_timers = total_ops + groups + programs.size();
  const auto wake_up = [&](std::size_t pi, double at) {
    if (ranks[pi].ahead) ranks[pi].wake_at = std::min(ranks[pi].wake_at, at);
    else timers.set_earlier(wake_timers + pi, at, order_of(pi, wake));
  };
  // Compute op i of rank pi now ends at ranks[pi].ops[i].end.
  const auto ends_at = [&](std::size_t pi, std::size_t i) {
    if (!ranks[pi].ahead) timers.set(timer_base[pi] + i, ranks[pi].ops[i].end, order_of(pi, i));
  };

  const auto examine = [](detail::rank_state& rs, std::size_t q) {
    rs.examining += !rs.queues[q].examine;
    rs.queues[q].examine = true;
  };
  // A wake-up: every head is looked at.
  const auto examine_all = [&](detail::rank_state& rs) {
    for (std::size_t q = 0; q < rs.queues.size(); ++q) examine(rs, q);
  };
  // Op i of rank pi is done: its successors have one predecessor fewer to wait for, and the
  // queue of one that waits for none now has a head to look at.
  const auto finish = [&](detail::rank_state& rs, std::size_t i) {
    rs.ops[i].now = state::done;
    for (std::uint32_t k = rs.ops[i].succ_begin; k < rs.ops[i].succ_end; ++k) {
      detail::op_state& next = rs.ops[arrays.succ[k]];
      if (--next.waiting == 0 && next.kind != op_kind::host_sync) examine(rs, next.queue);
    }
  };
  // The rank's SMs changed (some freed, or a kernel started whose SMs a communication kernel
  // can take): the heads that wait for SMs are looked at again.
  const auto sms_changed = [&](detail::rank_state& rs) {
    for (const std::size_t q : rs.sm_waiters) examine(rs, q);
    rs.sm_waiters.clear();
  };
  // Brings transfer g up to date at `t` and gives it its share now; it ends when its work is
  // done at that rate.
  const auto rerate = [&](std::size_t g, double t) {
    transfer& x = transfers[g];
    if (t > x.since) {  // past its latency: its work progressed at the old rate
      x.left = std::max(0.0, x.left - (t - x.since) * x.rate);
      x.since = t;
    }
    x.rate = 1;
    for (const std::size_t l : links_of(g)) x.rate = std::min(x.rate, 1.0 / static_cast<double>(on_link[l].size()));
    x.end = x.since + x.left / x.rate;
    timers.set(group_timers + g, x.end, group_order[g]);
  };
  // A transfer started or ended on `g_links` at `t`: every transfer in flight on one of them
  // gets its new share.
  std::vector<std::size_t> touched;
  const auto reshare = [&](std::span<const std::size_t> g_links, double t) {
    touched.clear();
    for (const std::size_t l : g_links) touched.insert(touched.end(), on_link[l].begin(), on_link[l].end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (const std::size_t h : touched) rerate(h, t);
  };
  // A member of group g launched at `t`; the last one starts its transfer.
  const auto launch = [&](std::size_t g, double t) {
    const auto& members = matched.groups[g];
    if (static_cast<int>(members.size()) != expected_size[g] || !matched.disagreement[g].empty()) return;
    if (++launched[g] < expected_size[g]) return;
    const schedule::op& o = programs[members.front().program].ops[members.front().op];
    const double us = checked(cost.comm_us(o, where[g]), members.front().program, members.front().op);
    const double latency =
        std::min(us, checked(cost.comm_latency_us(o, where[g]), members.front().program, members.front().op));
    for (const auto& mem : members) {
      ranks[mem.program].ops[mem.op].now = state::running;
      ranks[mem.program].ops[mem.op].start = t;
    }
    transfer& x = transfers[g];
    x.work = x.left = us - latency;
    x.since = t + latency;
    x.in_flight = true;
    for (const std::size_t l : links_of(g)) on_link[l].push_back(g);
    if (links_of(g).empty()) rerate(g, t);
    else reshare(links_of(g), t);
  };

  // Compute op i of rank pi on `sms` SMs: this class's model stretches the whole-GPU time the
  // set-up kept; a derived model is asked.
  const bool own_model = cost.analytic_compute();
  const auto on_sms = [&](std::size_t pi, std::size_t i, int sms) {
    const schedule::op& o = programs[pi].ops[i];
    return own_model ? cost.stretched_us(o, sms, ranks[pi].ops[i].whole_us) : cost.compute_us(o, sms);
  };
  // A running compute op's SMs become `sms` at `t`: the work left runs at the new count's speed.
  const auto resize = [&](std::size_t pi, detail::computing& c, int sms, double t) {
    c.done = std::min(1.0, c.done + (c.duration > 0 ? (t - c.since) / c.duration : 1.0));
    c.since = t;
    c.sms = sms;
    c.duration = checked(on_sms(pi, c.op, sms), pi, c.op);
    c.wave = -1;
    ranks[pi].ops[c.op].end = t + (1 - c.done) * c.duration;
    ends_at(pi, c.op);
  };
  // The time of one wave of running compute op `c` of rank pi on its SMs (0: not in waves).
  const auto wave_of = [&](std::size_t pi, detail::computing& c) {
    if (c.wave < 0) c.wave = cost.wave_us(programs[pi].ops[c.op], c.sms);
    return c.wave;
  };
  // When the first running compute op of the rank whose blocks hold SMs ends its current wave
  // (`t` if one is at a wave's end, or none has waves).
  const auto wave_end = [&](std::size_t pi, double t) {
    double first = never;
    for (detail::computing& c : ranks[pi].running) {
      if (wave_of(pi, c) <= 0) return t;
      if (t - c.since < 1e-9) {  // blocks placed now (the op started or changed SMs) hold a whole wave
        first = std::min(first, t + c.wave);
        continue;
      }
      const double left = std::fmod(ranks[pi].ops[c.op].end - t, c.wave);
      first = std::min(first, left < 1e-6 * c.wave || c.wave - left < 1e-6 * c.wave ? t : t + left);
    }
    return first == never ? t : first;
  };
  // Moves up to `count` SMs from the rank's running compute ops to its free pool.
  const auto take_sms = [&](std::size_t pi, int count, double t) {
    detail::rank_state& rs = ranks[pi];
    for (detail::computing& c : rs.running) {
      if (count <= 0) break;
      const int have = c.sms;
      if (have < 2 || (m.persistent_gemms && wave_of(pi, c) > 0)) continue;
      const int taken = std::min(count, have - 1);
      resize(pi, c, have - taken, t);
      rs.free_sms += taken;
      count -= taken;
    }
  };
  // Returns free SMs to the rank's running compute ops that were slowed, which speed up again.
  const auto give_back_sms = [&](std::size_t pi, double t) {
    detail::rank_state& rs = ranks[pi];
    for (detail::computing& c : rs.running) {
      if (rs.free_sms <= 0) break;
      const int have = c.sms;
      if (have >= m.sms) continue;
      const int given = std::min(rs.free_sms, m.sms - have);
      rs.free_sms -= given;
      resize(pi, c, have + given, t);
    }
  };

  // Compute op i of rank pi starts at `t` on all of the rank's free SMs (one at least).
  const auto start_compute = [&](std::size_t pi, std::size_t i, double t) {
    detail::rank_state& rs = ranks[pi];
    detail::op_state& s = rs.ops[i];
    const double duration =
        checked(rs.free_sms == m.sms ? s.whole_us : on_sms(pi, i, rs.free_sms), pi, i);
    // Filled in place: a record built aside and copied in stalls on its partial stores.
    detail::computing& c = rs.running.emplace_back();
    c.op = i;
    c.sms = rs.free_sms;
    c.since = t;
    c.duration = duration;
    rs.free_sms = 0;
    s.now = state::running;
    s.start = t;
    s.end = t + duration;
    ends_at(pi, i);
    sms_changed(rs);
  };
  // Hardware queue q of rank pi moves on to its next op, its head having started.
  const auto next_head = [&](std::size_t pi, std::size_t q) {
    detail::rank_state& rs = ranks[pi];
    ++rs.queues[q].next;
    // The op after the queue's new head is what this queue looks at after its next dispatch,
    // maybe many other ranks' events from now: start fetching its state and what its cost reads
    // when it does not start on the whole GPU (communication kernels hold SMs: TP overlap).
    if (rs.queues[q].next + 1 < rs.queues[q].end) {
      const std::size_t later = rs.queue_ops[rs.queues[q].next + 1];
      __builtin_prefetch(&rs.ops[later]);
      __builtin_prefetch(reinterpret_cast<const char*>(&rs.ops[later]) + sizeof(detail::op_state) - 1);
      __builtin_prefetch(&programs[pi].ops[later]);
      __builtin_prefetch(&programs[pi].ops[later].memory_bytes);
    }
  };
  const auto head_op = [&](const detail::rank_state& rs, std::size_t q) { return rs.queue_ops[rs.queues[q].next]; };
  const auto has_head = [&](const detail::rank_state& rs, std::size_t q) {
    return rs.queues[q].next < rs.queues[q].end && rs.ops[head_op(rs, q)].now != state::pending;
  };
  // Dispatches what rank pi can start at `t`: the host issues until a host sync whose work is
  // not finished; each hardware queue dispatches its head while the head can start, the queues
  // whose heads are on higher-priority streams first (the block scheduler serves pending work of
  // higher-priority streams first when SMs free up).
  const auto dispatch = [&](std::size_t pi, double t) {
    const schedule::program& p = programs[pi];
    detail::rank_state& rs = ranks[pi];
    const std::size_t n = p.ops.size();
    bool resume = rs.suspended;
    rs.suspended = false;
    for (bool progressed = true; progressed;) {
      std::size_t k = 0;  // into queue_order
      if (resume) {  // the pass it was suspended in goes on
        resume = false;
        progressed = rs.resume_progressed;
        k = rs.resume_index;
      } else {
        progressed = false;
        while (rs.next_issue < n) {
          const std::size_t i = rs.next_issue;
          detail::op_state& s = rs.ops[i];
          if (s.kind == op_kind::host_sync) {
            if (s.waiting > 0) break;
            rs.host_time = std::max(rs.host_time, t);
            s.start = s.end = rs.host_time;
            finish(rs, i);
          } else {
            rs.host_time += s.kind == op_kind::record || s.kind == op_kind::wait ? event_us : m.launch_us;
            s.start = rs.host_time;  // its issue time till it starts
            s.now = state::issued;
            examine(rs, s.queue);
          }
          ++rs.next_issue;
          progressed = true;
        }
        if (rs.examining == 0) break;  // no head to look at: nothing can start
        if (!rs.fixed_order) {
          rs.queue_order.clear();
          for (std::size_t q = 0; q < rs.queues.size(); ++q)
            if (rs.queues[q].examine && has_head(rs, q)) rs.queue_order.push_back(q);
          if (rs.queue_order.size() > 1)
            std::stable_sort(rs.queue_order.begin(), rs.queue_order.end(), [&](std::size_t a, std::size_t b) {
              return p.streams[static_cast<std::size_t>(p.ops[head_op(rs, a)].stream)].priority <
                     p.streams[static_cast<std::size_t>(p.ops[head_op(rs, b)].stream)].priority;
            });
        }
      }
      for (; k < rs.queue_order.size(); ++k) {
        const std::size_t q = rs.queue_order[k];
        if (!rs.queues[q].examine) continue;
        rs.queues[q].examine = false;
        --rs.examining;
        const auto wait_for_sms = [&] {
          if (std::find(rs.sm_waiters.begin(), rs.sm_waiters.end(), q) == rs.sm_waiters.end()) rs.sm_waiters.push_back(q);
        };
        while (has_head(rs, q)) {
          const std::size_t i = head_op(rs, q);
          detail::op_state& s = rs.ops[i];
          if (s.start > t) {  // not issued yet at `t`
            wake_up(pi, s.start);
            break;
          }
          if (s.waiting > 0) break;
          const op_kind kind = s.kind;
          if (rs.ahead && schedule::is_communication(kind)) {
            // A launch can change other ranks: it waits till they have reached `t`.
            rs.suspended = true;
            rs.resume_progressed = progressed;
            rs.resume_index = k;
            examine(rs, q);
            return;
          }
          if (kind == op_kind::record || kind == op_kind::wait) {
            s.start = s.end = t;
            finish(rs, i);
          } else if (opt.unlimited_resources) {
            if (kind == op_kind::compute) {
              s.now = state::running;
              s.start = t;
              s.end = t + checked(s.whole_us, pi, i);
              ends_at(pi, i);
            } else {
              s.now = state::launched;
              ++rs.comm_active;
              if (s.group >= 0) launch(static_cast<std::size_t>(s.group), t);
            }
          } else if (kind == op_kind::compute) {
            if (rs.free_sms < 1) {
              wait_for_sms();
              break;
            }
            start_compute(pi, i, t);
          } else {
            // A communication kernel that finds the SMs taken gets them as the running
            // kernels' blocks retire: a GEMM's at the end of its current wave (its hardware
            // queue waits till then; the GEMM's later waves run on fewer SMs), a persistent
            // GEMM's only at its end; other kernels' blocks are short and retire at once.
            const int asked = p.ops[i].sms;
            const int want = asked >= 0 ? asked : std::max(1, kind == op_kind::collective ? m.comm_sms : m.p2p_sms);
            if (rs.free_sms < want) {
              if (!m.persistent_gemms) {
                const double retire = wave_end(pi, t);
                if (retire > t) {
                  wake_up(pi, retire);
                  wait_for_sms();
                  break;
                }
              }
              take_sms(pi, want - rs.free_sms, t);
            }
            if (want > 0 && rs.free_sms < 1) {
              wait_for_sms();
              break;
            }
            s.sms = std::min(rs.free_sms, want);
            rs.free_sms -= s.sms;
            s.now = state::launched;
            ++rs.comm_active;
            if (s.group >= 0) launch(static_cast<std::size_t>(s.group), t);
          }
          next_head(pi, q);
          progressed = true;
        }
      }
    }
  };

  // Op i of rank pi ends at `t` (a compute op, or a member of a transfer that ends).
  const auto complete = [&](std::size_t pi, std::size_t i, double t) {
    detail::rank_state& rs = ranks[pi];
    rs.ops[i].end = t;
    finish(rs, i);
    const long g = rs.ops[i].group;
    if (g >= 0 && transfers[static_cast<std::size_t>(g)].in_flight) {
      // The transfer ends (for every member at once): its links are shared by fewer.
      transfers[static_cast<std::size_t>(g)].in_flight = false;
      for (const std::size_t l : links_of(static_cast<std::size_t>(g))) std::erase(on_link[l], static_cast<std::size_t>(g));
      reshare(links_of(static_cast<std::size_t>(g)), t);
    }
    if (schedule::is_communication(rs.ops[i].kind)) --rs.comm_active;
    if (opt.unlimited_resources) return;
    sms_changed(rs);
    if (rs.ops[i].kind == op_kind::compute) {
      const auto c = std::find_if(rs.running.begin(), rs.running.end(), [&](const detail::computing& x) { return x.op == i; });
      rs.free_sms += c->sms;
      rs.running.erase(c);
    } else {
      rs.free_sms += rs.ops[i].sms;
      give_back_sms(pi, t);
    }
  };

  // Event loop. Only ranks that something happened to are dispatched: all of them at the start,
  // then a rank when one of its ops completes or its wake-up comes due. The events of one time
  // run in (rank, op) order, events that come due at that time while they run included.
  std::vector<char> dirty(programs.size(), 1);
  std::vector<std::size_t> work(programs.size());
  for (std::size_t pi = 0; pi < programs.size(); ++pi) work[pi] = programs.size() - 1 - pi;
  const auto touch = [&](std::size_t pi) {
    if (!dirty[pi]) work.push_back(pi);
    dirty[pi] = 1;
  };
  // What comes due at `t` for rank pi: its op i ends, or (i == wake) its wake-up.
  const auto come_due = [&](std::size_t pi, std::size_t i, double t) {
    if (i == wake) {  // a head's issue came due, or a wave ended: every head is looked at
      examine_all(ranks[pi]);
      touch(pi);
      return;
    }
    const detail::rank_state& rs = ranks[pi];
    // Skipped: an op whose end moved (its SMs or its links' shares changed) since it came due.
    if (rs.ops[i].now != state::running) return;
    const double end = rs.ops[i].group >= 0 ? transfers[static_cast<std::size_t>(rs.ops[i].group)].end : rs.ops[i].end;
    if (end != t) return;
    touch(pi);
    complete(pi, i, t);
  };
  // A compute chain on rank pi running ahead: its one running op, a compute op, ends before
  // anything else of the rank is due, and its one successor is a compute op at the head of its
  // hardware queue, issued by then and waiting for it alone, with nothing else to issue, look at
  // or give SMs to. Then the end and the successor's start are what complete() and a dispatch
  // would do (the queue's next op, if issued, waits or is issued later), without the dispatch's
  // pass over the queues: most of a data-parallel rank's compute. False, changing nothing, when
  // anything else could happen.
  const auto hand_over = [&](std::size_t pi) {
    detail::rank_state& rs = ranks[pi];
    if (rs.running.size() != 1 || rs.examining != 0 || !rs.sm_waiters.empty()) return false;
    const std::size_t i = rs.running.front().op;
    const detail::op_state& s = rs.ops[i];
    const double t = s.end;
    if (!(t < rs.wake_at) || s.succ_end - s.succ_begin != 1 || rs.free_sms + rs.running.front().sms < 1) return false;
    const std::size_t j = arrays.succ[s.succ_begin];
    const detail::op_state& next = rs.ops[j];
    const std::size_t q = next.queue;
    const detail::hardware_queue& hq = rs.queues[q];
    if (next.kind != op_kind::compute || next.waiting != 1 || next.now != state::issued || next.start > t ||
        hq.next >= hq.end || rs.queue_ops[hq.next] != j)
      return false;
    const detail::op_state* after = hq.next + 1 < hq.end ? &rs.ops[rs.queue_ops[hq.next + 1]] : nullptr;
    if (after && after->now != state::pending && after->start <= t && after->waiting == 0) return false;
    if (rs.next_issue < rs.ops.size() &&
        (rs.ops[rs.next_issue].kind != op_kind::host_sync || rs.ops[rs.next_issue].waiting == 0))
      return false;
    complete(pi, i, t);  // examines q
    rs.queues[q].examine = false;
    --rs.examining;
    start_compute(pi, j, t);
    next_head(pi, q);
    if (after && after->now != state::pending && after->start > t) wake_up(pi, after->start);
    return true;
  };
  // Rank pi was just dispatched and has no communication op launched: nothing another rank does
  // can change it until it launches one, so it runs on by itself, its ops' ends and wake-up kept
  // in its state instead of the timer queue, in the order the loop would run them: the events of
  // one time in op order, its wake-up after them, then its dispatch. It stops before its next
  // launch (suspended: it goes on when the loop reaches that time, after every rank's earlier
  // events) or when nothing of its own is due. The order across ranks never changes a result, so
  // the times are the loop's; what it saves is the queue and the cache misses of interleaving
  // every rank's events (a data-parallel rank's compute runs mostly like this).
  const auto run_ahead = [&](std::size_t pi) {
    detail::rank_state& rs = ranks[pi];
    if (opt.unlimited_resources || rs.comm_active > 0 || rs.suspended) return;
    rs.ahead = true;
    for (const detail::computing& c : rs.running) timers.remove(timer_base[pi] + c.op);
    if (timers.contains(wake_timers + pi)) {
      rs.wake_at = timers.time_of(wake_timers + pi);
      timers.remove(wake_timers + pi);
    }
    double now = 0;
    for (;;) {
      if (hand_over(pi)) continue;
      now = rs.wake_at;
      for (const detail::computing& c : rs.running) now = std::min(now, rs.ops[c.op].end);
      if (now == never) break;
      for (;;) {  // what comes due at `now`, events that come due while they run included
        std::size_t first = wake;
        for (const detail::computing& c : rs.running)
          if (rs.ops[c.op].end <= now) first = std::min(first, c.op);
        if (first != wake) {
          complete(pi, first, now);
          continue;
        }
        if (rs.wake_at <= now) {
          rs.wake_at = never;
          examine_all(rs);
        }
        break;
      }
      dispatch(pi, now);
      if (rs.suspended) break;
    }
    rs.ahead = false;
    for (const detail::computing& c : rs.running) ends_at(pi, c.op);
    if (rs.wake_at < never) wake_up(pi, rs.wake_at);
    rs.wake_at = never;
    if (rs.suspended) timers.set(resume_timers + pi, now, order_of(pi, wake));  // its last dispatch's time
  };
  // The members of transfers that ended at `t`, in (rank, op) order, merged with the timers'.
  std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> members_due;
  double t = 0;
  for (;;) {
    while (!work.empty()) {
      const std::size_t pi = work.back();
      work.pop_back();
      dirty[pi] = 0;
      dispatch(pi, t);
      run_ahead(pi);
    }
    if (timers.empty()) break;
    t = timers.top_time();
    for (;;) {
      const bool timer = !timers.empty() && timers.top_time() <= t &&
                         (members_due.empty() || timers.top_order() < members_due.top());
      if (!timer && members_due.empty()) break;
      std::uint64_t order = 0;
      if (timer) {
        const auto fired = timers.pop();
        if (fired.id >= group_timers && fired.id < wake_timers) {
          for (const auto& mem : matched.groups[fired.id - group_timers]) members_due.push(order_of(mem.program, mem.op));
          continue;
        }
        if (fired.id >= resume_timers) {  // a suspended rank goes on
          touch(fired.id - resume_timers);
          continue;
        }
        order = fired.order;
      } else {
        order = members_due.top();
        members_due.pop();
      }
      come_due(static_cast<std::size_t>(order >> 32), static_cast<std::size_t>(order & 0xffffffffu), t);
    }
  }

  result out;
  if (opt.intervals) detail::reserve_large(out.intervals, total_ops);
  std::vector<std::string> blocked;
  std::vector<std::pair<double, double>> compute;  // one rank's at a time
  schedule::per_family_array<std::vector<std::pair<double, double>>> comm;
  for (std::size_t pi = 0; pi < programs.size(); ++pi) {
    const schedule::program& p = programs[pi];
    const detail::rank_state& rs = ranks[pi];
    compute.clear();
    for (auto& c : comm) c.clear();
    std::optional<schedule::rank_order> order;  // for the wait-for graph only
    for (std::size_t i = 0; i < p.ops.size(); ++i) {
      const op_kind kind = rs.ops[i].kind;
      if (rs.ops[i].now != state::done) {
        const schedule::op& o = p.ops[i];
        const std::string where_ =
            "rank " + std::to_string(p.rank) + " op " + std::to_string(i) + " (" + schedule::display_name(o) + ")";
        out.deadlock = true;
        if (!order) order.emplace(p);
        long blocker = -1;
        for (const std::size_t j : order->predecessors(i))
          if (rs.ops[j].now != state::done) {
            blocker = static_cast<long>(j);
            break;
          }
        const long g = rs.ops[i].group;
        std::string why;
        if (kind == op_kind::host_sync)
          why = o.event < 0 ? "the host waits for earlier ops" : "the host waits for event " + std::to_string(o.event);
        else if (rs.ops[i].now == state::pending) why = "not issued: the host is blocked at a host sync";
        else if (rs.ops[i].now == state::launched)
          why = g < 0 ? "launched; no rank issues its matching op"
                : !matched.disagreement[static_cast<std::size_t>(g)].empty()
                    ? "launched; its rendezvous never starts: " + matched.disagreement[static_cast<std::size_t>(g)]
                    : "launched; waits for the other members of its rendezvous to launch";
        else if (blocker >= 0)
          why = "waits for op " + std::to_string(blocker) + " (" + schedule::display_name(p.ops[static_cast<std::size_t>(blocker)]) + ")";
        else why = "waits behind the head of its hardware queue";
        blocked.push_back(where_ + ": " + why);
        continue;
      }
      if (kind == op_kind::host_sync) continue;
      if (opt.intervals) {
        const long g = rs.ops[i].group;
        out.intervals.push_back({p.rank, rs.ops[i].stream, static_cast<int>(i), rs.ops[i].start, rs.ops[i].end,
                                 g >= 0 ? transfers[static_cast<std::size_t>(g)].work : 0});
      }
      out.step_time_us = std::max(out.step_time_us, rs.ops[i].end);
      if (kind == op_kind::compute) detail::add_interval(compute, rs.ops[i].start, rs.ops[i].end);
      if (schedule::is_communication(kind))
        detail::add_interval(comm[static_cast<std::size_t>(rs.ops[i].family)], rs.ops[i].start, rs.ops[i].end);
    }
    detail::merge(compute);
    out.compute_us = std::max(out.compute_us, detail::length(compute));
    for (std::size_t f = 0; f < comm.size(); ++f) {
      detail::merge(comm[f]);
      out.comm_us[f] = std::max(out.comm_us[f], detail::length(comm[f]));
      out.exposed_comm_us[f] = std::max(out.exposed_comm_us[f], detail::uncovered(comm[f], compute));
    }
  }
  for (const auto& line : blocked) out.wait_for_graph += line + "\n";
  return out;
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
