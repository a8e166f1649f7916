// The class simulation against the full one, for the layout-grid and class tests: computed in a
// worker thread, checked (doctest) afterwards.
#pragma once

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <overlap/plan/plan.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/schedule/classes.hpp>
#include <overlap/sim/analysis/bound.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

#include "same_result.hpp"

struct class_comparison {
  int world = 0, representatives = 0;
  std::vector<std::string> asymmetries;  ///< of the full step against its classes
  std::string problems;                  ///< class_problems of the representatives' programs
  bool same_programs = false;            ///< the representatives' programs are the full step's for them
  overlap::sim::result full, classes;
  /// What the verifier finds in the representatives alone, and in the full step.
  std::vector<overlap::verify::finding> class_findings, full_findings;
  double class_bound_us = 0, full_bound_us = 0;                 ///< lower bounds of the class step and of the full one
  std::vector<overlap::sim::interval> full_of_representatives;  ///< the full step's, in order
};

/// Generates and simulates the composed step of `s` once per class, and compares it with the full
/// step `full_step` and its simulation `full`.
inline class_comparison compare_classes(const overlap::settings& s, const overlap::schedule::workload& w,
                                        const overlap::sim::cost_model& cost,
                                        const std::vector<overlap::schedule::program>& full_step,
                                        const overlap::sim::result& full) {
  namespace sc = overlap::schedule;
  class_comparison c;
  const overlap::resolved_settings r = overlap::derive(s);
  const sc::class_step step = sc::compose_class_step(s, r, w, cost.machine().gpus_per_node);
  c.world = step.classes.world();
  c.representatives = static_cast<int>(step.representatives.size());
  c.asymmetries = sc::asymmetries(full_step, step.classes, cost.machine().gpus_per_node);
  c.problems = sc::class_problems(step.representatives, step.classes);
  c.same_programs = true;
  for (const sc::program& p : step.representatives) {
    const sc::program& q = full_step[static_cast<std::size_t>(p.rank)];
    bool same = p.rank == q.rank && p.ops.size() == q.ops.size() && p.buffers == q.buffers &&
                p.num_events == q.num_events && p.comms.size() == q.comms.size() &&
                p.streams.size() == q.streams.size();
    for (std::size_t k = 0; same && k < p.comms.size(); ++k)
      same = p.comms[k].name == q.comms[k].name && p.comms[k].ranks == q.comms[k].ranks;
    for (std::size_t i = 0; same && i < p.ops.size(); ++i) {
      const sc::op &x = p.ops[i], &y = q.ops[i];
      same = x.kind == y.kind && x.stream == y.stream && x.key == y.key && x.comm == y.comm && x.peer == y.peer &&
             x.seq == y.seq && x.bytes == y.bytes && x.flops == y.flops && x.reads == y.reads && x.writes == y.writes;
    }
    c.same_programs = c.same_programs && same;
  }
  c.full = full;
  c.classes = overlap::sim::simulate(step.representatives, cost, step.classes, overlap::plan::options_for(r));
  c.class_findings = overlap::verify::verify(step.representatives, step.classes);
  c.full_findings = overlap::verify::verify(full_step);
  overlap::sim::options with_classes = overlap::plan::options_for(r);
  with_classes.classes = &step.classes;
  c.class_bound_us = overlap::sim::lower_bound(step.representatives, cost, with_classes).value();
  c.full_bound_us = overlap::sim::lower_bound(full_step, cost, overlap::plan::options_for(r)).value();
  for (const auto& i : full.intervals)
    if (step.classes.is_representative(i.rank)) c.full_of_representatives.push_back(i);
  return c;
}

/// Exactly equal: step time, exposed and total communication per family, compute, and every
/// interval of every representative.
inline void check(const class_comparison& c) {
  CHECK(c.asymmetries == std::vector<std::string>{});
  CHECK(c.problems == "");
  CHECK(c.same_programs);
  CHECK_FALSE(c.classes.deadlock);
  CHECK(c.classes.step_time_us == c.full.step_time_us);
  CHECK(c.classes.exposed_comm_us == c.full.exposed_comm_us);
  CHECK(c.classes.comm_us == c.full.comm_us);
  CHECK(c.classes.compute_us == c.full.compute_us);
  REQUIRE(c.classes.intervals.size() == c.full_of_representatives.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < c.classes.intervals.size(); ++i)
    differ += !same_interval(c.classes.intervals[i], c.full_of_representatives[i]);
  CHECK(differ == 0);
  CHECK(c.full_findings.size() == 0);
  CHECK(c.class_findings.size() == 0);
  CHECK(c.class_bound_us == c.full_bound_us);
}
