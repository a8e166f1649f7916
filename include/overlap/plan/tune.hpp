#pragma once
/// @file
/// `overlap::plan::tune`: searches the overlap knobs of a configuration by simulation. Every
/// overlap knob is tried, including the ones the configuration sets: EP overlap (with and without
/// delayed weight gradients), TP overlap and its userbuffer reduce-scatter slots, DP overlap
/// (overlap_grad_reduce, overlap_param_gather, the bucket size), CUDA_DEVICE_MAX_CONNECTIONS and
/// the p2p mode. Combinations the rule table rejects are counted by rule id, never simulated;
/// those whose step takes more memory than a rank may have (the peak over issue order,
/// sim/analysis/memory.hpp) are simulated but dropped.
/// The search is coordinate descent: each
/// knob in turn takes its best choice with the others held, until a pass changes nothing (at most
/// three passes); a knob changes only for a gain over 0.1 % of the step (below that the change is
/// noise of the model). A knob's choices are simulated at once on all cores, each in memory of its
/// own, and compared in order, so the result does not depend on the threads.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <overlap/plan/parallel.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/rules/validate.hpp>
#include <overlap/settings/settings.hpp>
#include <overlap/sim/analysis/memory.hpp>

namespace overlap::plan {

/// One value of a knob: how it reads, and what it does to the settings.
struct knob_choice {
  std::string label;
  std::function<void(settings&)> apply;
};

/// An overlap knob. Its first choice keeps the configuration's own value ("as configured").
struct knob {
  std::string name;
  std::vector<knob_choice> choices;
};

namespace detail {

/// What each knob's first choice does: it keeps the configuration's own value.
inline void keep_as_configured(settings&) {}

/// EP overlap, with and without delayed weight gradients.
inline knob ep_overlap_knob(const resolved_settings& r) {
  const auto ep = [](bool on, bool delay) {
    return [on, delay](settings& x) {
      x.overlap_moe_expert_parallel_comm = on;
      x.delay_wgrad_compute = delay;
    };
  };
  return {"EP overlap",
          {{std::string("ep_overlap=") + (r.overlap_moe_expert_parallel_comm ? "on" : "off") +
                (r.delay_wgrad_compute ? "+delay_wgrad" : "") + " (as configured)",
            keep_as_configured},
           {"ep_overlap=off", ep(false, false)},
           {"ep_overlap=on", ep(true, false)},
           {"ep_overlap=on+delay_wgrad", ep(true, true)}}};
}

/// An on/off knob of a flag: as configured, then true and false.
inline knob flag_knob(std::string name, const std::string& field, bool now, void (*set)(settings&, bool)) {
  const auto choice = [&](bool v) {
    return knob_choice{field + "=" + (v ? "true" : "false"), [set, v](settings& x) { set(x, v); }};
  };
  return {
      std::move(name),
      {{field + "=" + (now ? "true" : "false") + " (as configured)", keep_as_configured}, choice(true), choice(false)}};
}

/// The DP bucket size, from 16 to 256 MiB.
inline knob bucket_size_knob(const resolved_settings& r) {
  knob k{"bucket_size",
         {{"bucket_size=" + (r.bucket_size ? std::to_string(*r.bucket_size) : std::string("one")) + " (as configured)",
           keep_as_configured}}};
  for (const std::int64_t b : {16'777'216LL, 67'108'864LL, 134'217'728LL, 268'435'456LL})
    k.choices.push_back({"bucket_size=" + std::to_string(b), [b](settings& x) {
                           x.bucket_size = b;
                           x.num_buckets.reset();
                         }});
  return k;
}

/// The TP reduce-scatter slots (proj_fprop, fc2_fprop): a pipelined split on 8, 16 or 24 SMs, or
/// a ring exchange.
inline knob userbuffer_knob() {
  const auto slots = [](ub::method m, int num_sm) {
    return [m, num_sm](settings& x) {
      ub::user_config u = x.tp_comm_overlap_cfg.value_or(ub::user_config{});
      u.preset_name = {};
      for (const ub::slot_id id : {ub::slot_id::proj_fprop, ub::slot_id::fc2_fprop}) {
        ub::slot v = ub::default_knobs(m);
        v.num_sm = num_sm;
        u.slots[id] = v;
      }
      x.tp_comm_overlap_cfg = u;
    };
  };
  return {"TP userbuffers",
          {{"tp_slots=as configured", keep_as_configured},
           {"tp_slots=rs pipeline num_sm=8", slots(ub::method::pipeline, 8)},
           {"tp_slots=rs pipeline num_sm=16", slots(ub::method::pipeline, 16)},
           {"tp_slots=rs pipeline num_sm=24", slots(ub::method::pipeline, 24)},
           {"tp_slots=rs ring_exchange", slots(ub::method::ring_exchange, 1)}}};
}

/// CUDA_DEVICE_MAX_CONNECTIONS: 1, 8 (CUDA's default) or 32 hardware queues.
inline knob max_connections_knob(const resolved_settings& r) {
  knob k{"CUDA_DEVICE_MAX_CONNECTIONS",
         {{"max_connections=" + std::to_string(r.cuda_device_max_connections.value_or(8)) + " (as configured)",
           keep_as_configured}}};
  for (const int n : {1, 8, 32})
    k.choices.push_back(
        {"max_connections=" + std::to_string(n), [n](settings& x) { x.cuda_device_max_connections = n; }});
  return k;
}

/// The pipeline's p2p: overlapped, batched or plain.
inline knob p2p_knob(const resolved_settings& r) {
  const auto p2p = [](bool overlap, bool batch) {
    return [overlap, batch](settings& x) {
      x.overlap_p2p_comm = overlap;
      x.batch_p2p_comm = batch;
    };
  };
  return {"p2p",
          {{std::string("p2p=") +
                (r.overlap_p2p_comm ? "overlap"
                 : r.batch_p2p_comm ? "batch"
                                    : "plain") +
                " (as configured)",
            keep_as_configured},
           {"p2p=overlap", p2p(true, false)},
           {"p2p=batch", p2p(false, true)},
           {"p2p=plain", p2p(false, false)}}};
}

}  // namespace detail

/// The overlap knobs of `s` that its layout gives a meaning, each with every value it is tried
/// at; a choice that resolves to `s`'s own settings is left out (the first choice is that one).
inline std::vector<knob> overlap_knobs(const settings& s) {
  const resolved_settings r = derive(s);
  std::vector<knob> out;
  if (s.expert_model_parallel_size > 1 && s.num_moe_experts) out.push_back(detail::ep_overlap_knob(r));
  if (s.tensor_model_parallel_size > 1)
    out.push_back(detail::flag_knob("TP overlap", "tp_comm_overlap", r.tp_comm_overlap,
                                    [](settings& x, bool v) { x.tp_comm_overlap = v; }));
  if (s.data_parallel_size > 1)
    out.push_back(detail::flag_knob("overlap_grad_reduce", "overlap_grad_reduce", r.overlap_grad_reduce,
                                    [](settings& x, bool v) { x.overlap_grad_reduce = v; }));
  if (s.data_parallel_size > 1) out.push_back(detail::bucket_size_knob(r));
  if (s.data_parallel_size > 1 && s.distributed_optimizer)
    out.push_back(detail::flag_knob("overlap_param_gather", "overlap_param_gather", r.overlap_param_gather,
                                    [](settings& x, bool v) {
                                      x.overlap_param_gather = v;
                                      if (!v) x.align_param_gather = false;
                                    }));
  if (r.tp_comm_overlap) out.push_back(detail::userbuffer_knob());
  out.push_back(detail::max_connections_knob(r));
  if (s.pipeline_model_parallel_size > 1) out.push_back(detail::p2p_knob(r));
  for (knob& k : out)
    std::erase_if(k.choices, [&](const knob_choice& ch) {
      if (&ch == &k.choices.front()) return false;
      settings x = s;
      ch.apply(x);
      return derive(x) == r;
    });
  std::erase_if(out, [](const knob& k) { return k.choices.size() < 2; });
  return out;
}

/// One combination of knob choices (`picks[i]` of knob i) and what became of it.
struct tune_candidate {
  std::vector<std::size_t> picks;
  settings tried{};
  std::vector<std::string> rules;  ///< the rules it violates (then it is not simulated)
  bool failed = false;             ///< valid, but the step could not be built or hangs
  std::string failure;
  result simulated{};
  std::int64_t peak_bytes = 0;  ///< the most memory a rank's step takes (over issue order)
  bool too_big = false;         ///< more than the memory limit

  bool usable() const { return rules.empty() && !failed && !too_big; }
};

struct tune_result {
  std::vector<knob> knobs;
  std::vector<tune_candidate> tried;  ///< every combination tried, the configuration's first
  std::vector<std::size_t> ranked;    ///< the usable ones by step time, the best found first
  result overlap_off{};               ///< every overlap off, for the gain
  /// Rejected combinations per rule id (a combination may break several) or per failure.
  std::map<std::string, std::size_t> rejected_by;
  std::size_t rejected = 0;
  /// No combination fits in the memory limit: the search then ranked them all without it, and
  /// this is the least any valid combination takes (0: the limit held, or there was none).
  std::int64_t none_fits_least_bytes = 0;

  const tune_candidate& configured() const { return tried.front(); }
  const tune_candidate& best() const { return tried[ranked.front()]; }
};

namespace detail {

/// `tune`'s search, step by step: the configuration and every overlap off first, then coordinate
/// descent (from the configuration, or from its fastest neighbour that passes every rule), then
/// every combination tried ranked; again without the memory limit where none fits it. One search
/// per tuner.
class tuner {
 public:
  tuner(const settings& s, const schedule::workload& w, const cost_model& cost, unsigned threads,
        const std::function<void(std::size_t, std::size_t)>& progress, std::int64_t memory_limit)
      : s_(s),
        w_(w),
        cost_(cost),
        threads_(threads),
        progress_(progress),
        memory_limit_(memory_limit),
        spaces_(threads > 0 ? threads : default_threads()) {
    out_.knobs = overlap_knobs(s);
    for (const knob& k : out_.knobs) planned_ += 2 * (k.choices.size() - 1);
  }

  tune_result run() && {
    simulate_configuration();
    strictly_valid_ = validate(s_).ok();
    search();
    if (out_.ranked.empty()) search_without_memory_limit();  // none fits; the configuration was simulated
    const std::size_t best_index = seen_.at(best_);
    std::stable_partition(out_.ranked.begin(), out_.ranked.end(), [&](std::size_t i) { return i == best_index; });
    return std::move(out_);
  }

 private:
  const std::vector<knob>& knobs() const { return out_.knobs; }

  /// The configuration with choice `picks[i]` of each knob i.
  settings settings_of(const std::vector<std::size_t>& picks) const {
    settings x = s_;
    for (std::size_t i = 0; i < knobs().size(); ++i) knobs()[i].choices[picks[i]].apply(x);
    return x;
  }

  /// One combination: the rules it breaks, or its simulation (in `space`) and peak memory.
  tune_candidate evaluate(const std::vector<std::size_t>& picks, workspace& space) const {
    tune_candidate c;
    c.picks = picks;
    c.tried = settings_of(c.picks);
    // The configuration as upstream runs it; every combination searched passes every rule.
    const bool configured = std::all_of(c.picks.begin(), c.picks.end(), [](std::size_t p) { return p == 0; });
    for (const diagnostic& d : configured ? validate_runnable(c.tried) : validate(c.tried)) c.rules.emplace_back(d.id);
    if (!c.rules.empty()) return c;
    try {
      class_simulation made = simulate_by_class(c.tried, w_, cost_, {}, /*intervals=*/false, &space);
      c.simulated = std::move(made.simulated);
      for (const schedule::program& p : made.step)
        c.peak_bytes = std::max(c.peak_bytes, sim::peak_in_issue_order(p).bytes);
      c.too_big = memory_limit_ > 0 && c.peak_bytes > memory_limit_;
      c.failed = c.simulated.deadlock;
      if (c.failed) c.failure = "hangs";
    } catch (const std::invalid_argument& e) {
      c.failed = true;
      c.failure = e.what();
    }
    return c;
  }

  /// Simulates the combinations of `batch` not seen yet, at once, each in its own slot, and adds
  /// them to those tried in the batch's order.
  void evaluate_all(const std::vector<std::vector<std::size_t>>& batch) {
    std::vector<std::vector<std::size_t>> fresh;
    for (const auto& picks : batch)
      if (!seen_.contains(picks) && std::find(fresh.begin(), fresh.end(), picks) == fresh.end()) fresh.push_back(picks);
    std::vector<tune_candidate> done(fresh.size());
    parallel_for(
        fresh.size(), [&](std::size_t i, unsigned worker) { done[i] = evaluate(fresh[i], spaces_[worker]); }, threads_);
    for (tune_candidate& c : done) {
      seen_.emplace(c.picks, out_.tried.size());
      out_.tried.push_back(std::move(c));
      if (progress_) progress_(out_.tried.size(), planned_);
    }
  }

  const tune_candidate& at(const std::vector<std::size_t>& picks) const { return out_.tried[seen_.at(picks)]; }

  /// Whether `a` beats `b`: usable where `b` is not, or faster by more than 0.1 % of the step
  /// (below that the change is noise of the model).
  static bool better(const tune_candidate& a, const tune_candidate& b) {
    if (a.usable() != b.usable()) return a.usable();
    return a.usable() && a.simulated.step_time_us < b.simulated.step_time_us * (1 - 1e-3);
  }

  /// The configuration and the step with every overlap off, at once; a configuration whose step
  /// cannot be simulated has nothing to search from.
  void simulate_configuration() {
    best_.assign(knobs().size(), 0);
    parallel_for(
        2,
        [&](std::size_t i) {
          if (i == 0)
            evaluate_all({best_});
          else
            out_.overlap_off =
                simulate_by_class(without_overlap(s_, schedule::family::none), w_, cost_, {}, false).simulated;
        },
        threads_);
    if (!out_.configured().rules.empty() || out_.configured().failed)
      throw std::invalid_argument("plan::tune: the configuration's step cannot be simulated: " +
                                  out_.configured().failure);
  }

  /// Coordinate descent from the configuration (or its fastest neighbour that passes every rule),
  /// then every combination tried ranked.
  void search() {
    best_.assign(knobs().size(), 0);
    if (!strictly_valid_) start_from_best_neighbour();
    descend();
    rank_tried();
  }

  /// From a configuration that breaks a rule upstream does not check: the fastest of its
  /// neighbours (one knob changed) that is usable, or the first usable one.
  void start_from_best_neighbour() {
    std::vector<std::vector<std::size_t>> neighbours;
    for (std::size_t k = 0; k < knobs().size(); ++k)
      for (std::size_t j = 1; j < knobs()[k].choices.size(); ++j) {
        neighbours.push_back(best_);
        neighbours.back()[k] = j;
      }
    evaluate_all(neighbours);
    const std::vector<std::size_t> given = best_;
    for (const auto& picks : neighbours)
      if (at(picks).usable() && (best_ == given || at(picks).simulated.step_time_us < at(best_).simulated.step_time_us))
        best_ = picks;
  }

  /// Each knob in turn takes its best choice with the others held, until a pass changes nothing
  /// (at most three passes).
  void descend() {
    for (int pass = 0; pass < 3; ++pass) {
      bool changed = false;
      for (std::size_t k = 0; k < knobs().size(); ++k) {
        std::vector<std::vector<std::size_t>> batch;
        for (std::size_t j = 0; j < knobs()[k].choices.size(); ++j) {
          batch.push_back(best_);
          batch.back()[k] = j;
        }
        evaluate_all(batch);
        for (const auto& picks : batch)
          if (better(at(picks), at(best_))) {
            best_ = picks;
            changed = true;
          }
      }
      if (!changed) break;
    }
  }

  /// The usable combinations by step time, the others counted by what rejects them.
  void rank_tried() {
    out_.ranked.clear();
    out_.rejected_by.clear();
    out_.rejected = 0;
    for (std::size_t i = 0; i < out_.tried.size(); ++i) {
      const tune_candidate& c = out_.tried[i];
      if (c.usable()) {
        out_.ranked.push_back(i);
        continue;
      }
      ++out_.rejected;
      if (c.failed) ++out_.rejected_by["simulation: " + c.failure.substr(0, 80)];
      if (c.too_big && !c.failed) ++out_.rejected_by["memory: more than the limit"];
      for (const std::string& id : c.rules) ++out_.rejected_by[id];
    }
    // By step time, ties to the combination that changes fewer knobs; the best found leads, ahead
    // of one faster by less than the 0.1 % a knob must gain (`run` puts it first).
    const auto changes = [&](std::size_t i) {
      return std::count_if(out_.tried[i].picks.begin(), out_.tried[i].picks.end(),
                           [](std::size_t p) { return p != 0; });
    };
    std::sort(out_.ranked.begin(), out_.ranked.end(), [&](std::size_t a, std::size_t b) {
      const double ta = out_.tried[a].simulated.step_time_us, tb = out_.tried[b].simulated.step_time_us;
      if (ta != tb) return ta < tb;
      return changes(a) < changes(b);
    });
  }

  /// No combination fits in the memory limit: the search again without it, after noting the least
  /// memory a valid combination takes.
  void search_without_memory_limit() {
    std::int64_t least = out_.configured().peak_bytes;
    for (tune_candidate& c : out_.tried) {
      if (c.rules.empty() && !c.failed) least = std::min(least, c.peak_bytes);
      c.too_big = false;
    }
    memory_limit_ = 0;
    out_.none_fits_least_bytes = least;
    search();
  }

  const settings& s_;
  const schedule::workload& w_;
  const cost_model& cost_;
  const unsigned threads_;
  const std::function<void(std::size_t, std::size_t)>& progress_;
  std::int64_t memory_limit_;  ///< 0: none
  tune_result out_;
  std::size_t planned_ = 1;  ///< the combinations a search is expected to simulate, for `progress`
  std::map<std::vector<std::size_t>, std::size_t> seen_;  ///< picks -> index into out_.tried
  std::vector<workspace> spaces_;                         ///< one per thread
  std::vector<std::size_t> best_;                         ///< the best combination found so far
  bool strictly_valid_ = true;  ///< the configuration passes every rule, those upstream does not check too
};

}  // namespace detail

/// Searches `s`'s overlap knobs for workload `w` on `cost`'s machine, on up to `threads` threads
/// (0: one per core); `progress(done, planned)` is called as combinations are simulated. A
/// combination whose rank takes more than `memory_limit` bytes (0: no limit) is dropped; where
/// none fits, the search is run again without the limit and `none_fits_least_bytes` says so. `s`
/// must run as upstream runs it (validate_runnable) and its step be buildable (else
/// std::invalid_argument naming why); every other combination must pass every rule. The search
/// starts from `s`, or, where `s` breaks a rule upstream does not check, from its fastest
/// neighbour that breaks none (every knob is searched from there).
inline tune_result tune(const settings& s, const schedule::workload& w, const cost_model& cost, unsigned threads = 0,
                        const std::function<void(std::size_t, std::size_t)>& progress = {},
                        std::int64_t memory_limit = 0) {
  if (memory_limit < 0)
    throw std::invalid_argument("plan::tune: memory_limit " + std::to_string(memory_limit) + " < 0");
  if (const report rep = validate_runnable(s); !rep.ok())
    throw std::invalid_argument("plan::tune: the configuration violates [" + std::string(rep.begin()->id) + "]");
  return detail::tuner(s, w, cost, threads, progress, memory_limit).run();
}

}  // namespace overlap::plan
