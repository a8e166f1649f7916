// Schedule quality: for canonical workloads of each family, and one with all four composed, the
// simulated step with overlap, the step without, and a lower bound (sim/analysis/bound.hpp: per rank the
// largest of the compute on the whole GPU, each link's busy time and the critical path).
// Prints {"records":[...]} on stdout; "ops" are those simulated, of one representative per class of
// symmetric ranks (plan/plan.hpp).
#include <cstdio>
#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/sim/analysis/bound.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
std::size_t ops(const std::vector<sc::program>& step) {
  std::size_t n = 0;
  for (const auto& p : step) n += p.ops.size();
  return n;
}

const char* bound_by(const ov::sim::step_bound& b) {
  const double v = b.value();
  if (v == b.critical_path_us) return "critical_path";
  if (v == b.compute_us) return "compute";
  return v == b.nvlink_us ? "nvlink" : "network";
}

void print(const ov::plan::family_plan& plan, const char* family, const char* workload_name,
           const ov::sim::cost_model& cost, ov::sim::options opt, bool& first) {
  opt.classes = &plan.overlap_classes;
  const ov::sim::step_bound b = ov::sim::lower_bound(plan.overlap_step, cost, opt);
  std::printf(
      "%s{\"family\":\"%s\",\"workload\":\"%s\",\"ranks\":%d,\"classes\":%zu,\"ops\":%zu,\"baseline_us\":%.1f,"
      "\"overlap_us\":%.1f,\"lower_bound_us\":%.1f,\"bound_by\":\"%s\","
      "\"overlap_over_bound\":%.3f}",
      first ? "" : ",", family, workload_name, plan.overlap_classes.world(), plan.overlap_step.size(),
      ops(plan.overlap_step), plan.baseline.step_time_us, plan.overlap.step_time_us, b.value(), bound_by(b),
      plan.overlap.step_time_us / b.value());
  first = false;
}

/// Each family the config enables, alone, on H100 nodes (`gpus_per_node` of them per node).
template <class Cfg>
void records(const char* workload_name, const sc::workload& w, bool& first, int gpus_per_node = 8) {
  ov::sim::machine m = ov::sim::h100_node();
  m.gpus_per_node = gpus_per_node;
  const ov::sim::analytic_cost_model h100(m);
  for (const auto& plan : ov::plan::plan_families(Cfg::settings, w, h100))
    print(plan, std::string(sc::to_string(plan.family)).c_str(), workload_name, h100,
          ov::plan::options_for(Cfg::resolved), first);
}

/// All the families the config enables, composed into one step.
template <class Cfg>
void composed_record(const char* workload_name, const sc::workload& w, bool& first) {
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  print(ov::plan::plan_step(Cfg::settings, w, h100), "all", workload_name, h100, ov::plan::options_for(Cfg::resolved),
        first);
}
}  // namespace

int main() {
  bool first = true;
  std::printf("{\"records\":[");
  sc::workload dense{.num_layers = 4, .micro_batches = 4, .hidden_size = 4096, .ffn_hidden_size = 14336};
  records<ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::precision<ov::dtype::bf16>>>(
      "dense_h4096_tp4", dense, first);
  records<ov::config<ov::dp<8>, ov::distributed_optimizer<>, ov::precision<ov::dtype::bf16>>>("dense_h4096_dp8", dense,
                                                                                              first);
  sc::workload deep{.num_layers = 8, .micro_batches = 8, .hidden_size = 4096, .ffn_hidden_size = 14336};
  // Pipeline stages sit on different nodes (Megatron puts pp outermost); inside one NVLink node
  // a transfer costs less than the SMs that receives posted early hold.
  records<ov::config<ov::pp<4>, ov::vpp<2>, ov::precision<ov::dtype::bf16>>>("dense_h4096_pp4_vpp2_m8_stage_per_node",
                                                                             deep, first, 1);
  sc::workload moe{
      .num_layers = 4, .micro_batches = 4, .hidden_size = 4096, .moe_router_topk = 8, .moe_ffn_hidden_size = 768};
  records<ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                     ov::distributed_optimizer<>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                     ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>>>("moe_h4096_top8_ep8", moe,
                                                                                         first);
  sc::workload moe_pp{.num_layers = 8,
                      .micro_batches = 8,
                      .hidden_size = 4096,
                      .ffn_hidden_size = 14336,
                      .moe_router_topk = 8,
                      .moe_ffn_hidden_size = 768};
  composed_record<ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::pp<2>, ov::vpp<2>,
                             ov::dp<8>, ov::ep<8>, ov::etp<1>, ov::num_moe_experts<64>, ov::distributed_optimizer<>,
                             ov::precision<ov::dtype::bf16>, ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                             ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>>>(
      "moe_h4096_tp2_pp2_vpp2_dp8_ep8", moe_pp, first);
  std::printf("]}\n");
}
