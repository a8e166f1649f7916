#pragma once
// Shared by the examples: prints a valid config's resolved settings, environment and notes, then
// simulates each overlap family it enables on an H100 node, with and without overlap, and then
// all of them composed into one step; prints the predicted step time, exposed communication and
// the peak memory of the rank that needs the most, and writes the overlapped timelines (Chrome
// trace JSON and SVG) into the directory given as the first argument.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include <overlap/overlap.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/settings/print.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/trace/chrome_trace.hpp>
#include <overlap/trace/svg_timeline.hpp>

/// The overlapped step's Chrome trace and SVG picture as `base`.json and `base`.svg: one
/// representative per class of symmetric ranks, labelled with its class size.
inline void write_timelines(const std::string& base, const overlap::plan::family_plan& plan) {
  std::ofstream json(base + ".json");
  overlap::trace::write_chrome_trace(json, plan.overlap_step, plan.overlap, &plan.overlap_classes);
  std::ofstream svg(base + ".svg");
  overlap::trace::write_svg_timeline(svg, plan.overlap_step, plan.overlap, {}, &plan.overlap_classes);
}

template <class Cfg>
void show(std::string_view title, const overlap::schedule::workload& w, std::string_view name, int argc, char** argv) {
  std::cout << "== " << title << " ==\n";
  overlap::write_resolved(std::cout, Cfg::resolved);
  std::cout << "-- environment --\n";
  overlap::write_environment(std::cout, Cfg::resolved);
  std::cout << "-- notes --\n";
  if (Cfg::notes.empty()) std::cout << "(none)\n";
  for (const auto& note : Cfg::notes) std::cout << note << '\n';

  const std::string dir = argc > 1 ? argv[1] : ".";
  const overlap::sim::analytic_cost_model h100(overlap::sim::h100_node());
  std::cout << "-- simulated on an H100 node, each family alone (" << w.num_layers << " layers, " << w.micro_batches
            << " micro-batches) --\n";
  std::printf("%-6s %14s %14s %16s %16s\n", "family", "baseline_us", "overlap_us", "exposed_base_us",
              "exposed_over_us");
  for (const auto& plan : overlap::plan::plan_families(Cfg::settings, w, h100)) {
    const auto f = static_cast<std::size_t>(plan.family);
    const std::string family(overlap::schedule::to_string(plan.family));
    std::printf("%-6s %14.0f %14.0f %16.0f %16.0f%s\n", family.c_str(), plan.baseline.step_time_us,
                plan.overlap.step_time_us, plan.baseline.exposed_comm_us[f], plan.overlap.exposed_comm_us[f],
                plan.overlap.deadlock || plan.baseline.deadlock ? "  HANG" : "");
    if (!plan.note.empty()) std::cout << "       (" << plan.note << ")\n";
    write_timelines(dir + "/" + std::string(name) + "_" + family, plan);
  }
  const auto all = overlap::plan::plan_step(Cfg::settings, w, h100);
  const std::size_t classes = all.overlap_step.size();
  std::cout << "-- all families composed: " << all.overlap_classes.world() << " ranks in " << classes
            << (classes == 1 ? " class" : " classes") << " of symmetric ranks --\n";
  std::printf("step_us: baseline %.0f, overlap %.0f%s\n", all.baseline.step_time_us, all.overlap.step_time_us,
              all.overlap.deadlock || all.baseline.deadlock ? "  HANG" : "");
  for (const auto f : {overlap::schedule::family::tp, overlap::schedule::family::dp, overlap::schedule::family::pp,
                       overlap::schedule::family::ep}) {
    const auto i = static_cast<std::size_t>(f);
    if (all.baseline.comm_us[i] == 0 && all.overlap.comm_us[i] == 0) continue;
    std::printf("exposed %s_us: baseline %.0f, overlap %.0f\n", std::string(overlap::schedule::to_string(f)).c_str(),
                all.baseline.exposed_comm_us[i], all.overlap.exposed_comm_us[i]);
  }
  // The memory of the rank that needs the most at its peak, over the simulated step.
  const std::vector<overlap::sim::memory_peak> peaks = overlap::sim::peaks_in_time(all.overlap_step, all.overlap);
  const std::size_t most = overlap::sim::highest(peaks);
  std::printf("peak memory: %.2f GB on rank %d (", static_cast<double>(peaks[most].bytes) / 1e9,
              all.overlap_step[most].rank);
  for (std::size_t u = 0; u < overlap::sim::memory_uses; ++u)
    std::printf("%s%s %.2f", u ? ", " : "",
                std::string(overlap::sim::to_string(static_cast<overlap::sim::memory_use>(u))).c_str(),
                static_cast<double>(peaks[most].by_use[u]) / 1e9);
  std::printf(" GB)\n");
  write_timelines(dir + "/" + std::string(name) + "_all", all);
  std::cout << "timelines: " << dir << "/" << name << "_<family|all>.{json,svg}\n";
}
