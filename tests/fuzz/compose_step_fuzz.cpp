// libFuzzer target: bytes decode into settings and a workload; compose_step either throws one
// std::invalid_argument or returns programs that verify and simulate without a hang, and it
// builds only settings validate_runnable accepts. Half the
// inputs start from small valid-looking layouts so that generation is reached, half decode
// every settings field. Steps of more than 512 layer passes are not generated (a
// unit test covers compose_step's own bound), so that each execution stays fast.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <overlap/plan/plan.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

#include "fuzz_input.hpp"

namespace {

overlap::settings small_layout(fuzz::byte_reader& in) {
  overlap::settings s;
  const auto size = [&] { return 1 << (in.next<std::uint8_t>() % 3); };
  s.tensor_model_parallel_size = size();
  s.pipeline_model_parallel_size = size();
  s.data_parallel_size = size();
  s.expert_model_parallel_size = size();
  s.expert_tensor_parallel_size = 1;
  if (in.flag()) s.virtual_pipeline_model_parallel_size = 2;
  if (in.flag() || s.expert_model_parallel_size > 1) s.num_moe_experts = 8 << (in.next<std::uint8_t>() % 2);
  if (in.flag()) s.moe_shared_expert_intermediate_size = 256;
  s.precision = overlap::dtype::bf16;
  s.moe_token_dispatcher_type = overlap::dispatcher::alltoall;
  s.sequence_parallel = s.tensor_model_parallel_size > 1;
  s.distributed_optimizer = in.flag();
  if (s.tensor_model_parallel_size > 1) s.tp_comm_overlap = in.flag();
  if (s.expert_model_parallel_size > 1) {
    s.overlap_moe_expert_parallel_comm = in.flag();
    s.delay_wgrad_compute = *s.overlap_moe_expert_parallel_comm && in.flag();
  }
  if (in.flag()) s.recompute_granularity = in.flag() ? overlap::granularity::full : overlap::granularity::selective;
  if (in.flag()) s.num_buckets = 1 + in.next<std::uint8_t>() % 4;
  if (in.flag()) {
    overlap::ub::user_config c;
    c.slots[overlap::ub::slot_id::proj_fprop] = fuzz::any_slot(in);
    s.tp_comm_overlap_cfg = c;
  }
  return s;
}

std::int64_t layer_passes(const overlap::settings& s, const overlap::schedule::workload& w) {
  std::int64_t n = overlap::rules::world_size(s);
  for (const int f : {w.num_layers + 2, w.micro_batches, 2}) n = f <= 0 ? 0 : n * f > (1 << 20) ? (1 << 20) : n * f;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::byte_reader in(data, size);
  const overlap::settings s = in.flag() ? small_layout(in) : fuzz::decode_settings(in);
  const overlap::schedule::workload w = fuzz::decode_workload(in);
  // What compose_step builds: every rule passed but those upstream does not check.
  const overlap::report checked = overlap::validate_runnable(s);
  if (checked.ok() && layer_passes(s, w) > 512) return 0;
  const overlap::resolved_settings r = checked.resolved.value_or(overlap::resolved_settings{});
  std::vector<overlap::schedule::program> step;
  try {
    step = overlap::schedule::compose_step(s, r, w);
  } catch (const std::invalid_argument& e) {
    if (std::string(e.what()).rfind("compose_step: ", 0) != 0) std::abort();
    return 0;
  }
  if (!checked.ok()) std::abort();  // settings upstream refuses must be refused
  const std::string report = overlap::verify::verify_report(step);
  if (!report.empty()) {
    std::fprintf(stderr, "generated step does not verify:\n%s", report.c_str());
    std::abort();
  }
  const overlap::sim::analytic_cost_model h100(overlap::sim::h100_node());
  const overlap::sim::result sim = overlap::sim::simulate(step, h100, overlap::plan::options_for(r));
  if (sim.deadlock) {
    std::fprintf(stderr, "generated step hangs:\n%s", sim.wait_for_graph.c_str());
    std::abort();
  }
  return 0;
}
