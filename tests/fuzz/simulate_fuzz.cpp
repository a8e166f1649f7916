// libFuzzer target: bytes decode into a step of small programs and a class map; simulate() and
// lower_bound(), of the full step and of the step the programs stand for under the map, either
// throw std::invalid_argument or finish (libFuzzer's timeout catches a hang). A step that
// verify() accepts simulates without an exception (but for a number format the machine has no
// rate for) and, without SM contention (which verify does
// not model), without a deadlock; a step that does not hang takes at least its lower bound; the
// event loop's fast paths change no result. The memory a rank needs (sim/analysis/memory.hpp), over issue
// order and over the simulated timeline, is found or refused with std::invalid_argument; found,
// it holds at least the state held through the step and at most every buffer at once (issue
// order); refused for a verified step only when the sizes add up past 2^63 bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include <overlap/sim/analysis/bound.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

#include "../same_result.hpp"
#include "fuzz_input.hpp"

namespace {
/// The memory properties above for `step` and its simulation `ran`.
void check_memory(const std::vector<overlap::schedule::program>& step, const overlap::sim::result& ran, bool verified) {
  try {
    for (const overlap::schedule::program& p : step) {
      const overlap::sim::memory_peak peak = overlap::sim::peak_in_issue_order(p);
      const overlap::sim::model_state state = overlap::sim::model_state_of(p);
      if (state.total() > peak.bytes) std::abort();  // held through the step, so within every peak
      std::int64_t held = 0, all = 0;  // held is within the peak's sums; all may overflow (unused buffers)
      bool overflows = false;
      for (std::size_t b = 0; b < p.buffers.size(); ++b) {
        const std::int64_t bytes = b < p.buffer_bytes.size() ? p.buffer_bytes[b] : 0;
        overflows = overflows || __builtin_add_overflow(all, bytes, &all);
        if (overlap::sim::held_through_step(p.buffers[b].kind)) held += bytes;
      }
      if (peak.bytes < held || (!overflows && peak.bytes > all)) {
        std::fprintf(stderr, "peak %lld outside [%lld, %lld]\n", static_cast<long long>(peak.bytes),
                     static_cast<long long>(held), static_cast<long long>(all));
        std::abort();
      }
    }
    for (const overlap::sim::memory_peak& peak : overlap::sim::peaks_in_time(step, ran))
      if (peak.bytes < 0) std::abort();
  } catch (const std::invalid_argument& e) {
    if (verified && std::string_view(e.what()).find("past 2^63") == std::string_view::npos) {
      std::fprintf(stderr, "a verified step's memory is refused: %s\n", e.what());
      std::abort();
    }
  }
}

/// The properties above for `step` (with `opt.classes`, the step its programs stand for).
void check(const std::vector<overlap::schedule::program>& step, overlap::sim::options opt, bool verified) {
  const overlap::sim::analytic_cost_model h100(overlap::sim::h100_node());
  try {
    const overlap::sim::result contended = overlap::sim::simulate(step, h100, opt);
    overlap::sim::options plain = opt;  // the event loop without its fast paths: the same bit for bit
    plain.fast_paths = false;
    if (!identical(contended, overlap::sim::simulate(step, h100, plain))) {
      std::fprintf(stderr, "the fast paths change the result\n");
      std::abort();
    }
    if (!opt.classes) check_memory(step, contended, verified);
    const overlap::sim::step_bound bound = overlap::sim::lower_bound(step, h100, opt);
    if (verified && opt.cuda_device_max_connections >= 4 && bound.critical_path_us < 0) std::abort();
    // No run of the step on the machine model beats its lower bound (shared links included).
    if (!contended.deadlock && bound.value() > contended.step_time_us * (1 + 1e-9) + 1e-6) {
      std::fprintf(stderr,
                   "bound %.6f us (compute %.6f, nvlink %.6f, network %.6f, critical path %.6f) over the "
                   "simulated %.6f us\n",
                   bound.value(), bound.compute_us, bound.nvlink_us, bound.network_us, bound.critical_path_us,
                   contended.step_time_us);
      std::abort();
    }
    opt.unlimited_resources = true;
    const overlap::sim::result ideal = overlap::sim::simulate(step, h100, opt);
    if (verified && opt.cuda_device_max_connections >= 4 && ideal.deadlock) {
      std::fprintf(stderr, "verified step deadlocks in the simulator:\n%s", ideal.wait_for_graph.c_str());
      std::abort();
    }
  } catch (const std::invalid_argument& e) {
    // A verified step runs, unless it asks for a number format the machine has no rate for.
    if (verified && std::string_view(e.what()).find("has no tensor cores") == std::string_view::npos) std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::byte_reader in(data, size);
  const auto step = fuzz::decode_step(in);
  overlap::sim::options opt;
  opt.cuda_device_max_connections = 1 + in.next<std::uint8_t>() % 8;
  const overlap::schedule::rank_classes classes = fuzz::decode_classes(in);
  check(step, opt, overlap::verify::verify(step).empty());
  opt.classes = &classes;
  check(step, opt, overlap::verify::verify(step, classes).empty());
  return 0;
}
