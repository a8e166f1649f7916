// Schedule quality: for canonical workloads of each family, the simulated step with overlap, the
// step without, and a lower bound (per rank the larger of the compute it needs on the whole GPU and
// the time its communication keeps the links busy; the critical path is not included yet).
// Prints {"records":[...]} on stdout.
#include <cstdio>
#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/sim/plan.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
double lower_bound_us(const std::vector<sc::program>& step, const ov::sim::result& r,
                      const ov::sim::cost_model& cost) {
  double bound = 0;
  for (const auto& p : step) {
    double compute = 0, comm = 0;
    for (const auto& o : p.ops)
      if (o.kind == sc::op_kind::compute) compute += cost.compute_us(o, cost.machine().sms);
    for (const auto& i : r.intervals)
      if (i.rank == p.rank) {
        const auto kind = p.ops[static_cast<std::size_t>(i.op)].kind;
        if (kind == sc::op_kind::collective || kind == sc::op_kind::send || kind == sc::op_kind::recv)
          comm += i.end_us - i.start_us;
      }
    bound = std::max({bound, compute, comm});
  }
  return bound;
}

template <class Cfg>
void records(const char* workload_name, const sc::workload& w, bool& first) {
  const ov::sim::cost_model h100(ov::sim::h100_node());
  for (const auto& plan : ov::sim::plan_families(Cfg::settings, w, h100)) {
    const std::string family(sc::to_string(plan.family));
    const double bound = lower_bound_us(plan.overlap_step, plan.overlap, h100);
    std::printf("%s{\"family\":\"%s\",\"workload\":\"%s\",\"baseline_us\":%.1f,\"overlap_us\":%.1f,"
                "\"lower_bound_us\":%.1f,\"overlap_over_bound\":%.3f}",
                first ? "" : ",", family.c_str(), workload_name, plan.baseline.step_time_us,
                plan.overlap.step_time_us, bound, plan.overlap.step_time_us / bound);
    first = false;
  }
}
}  // namespace

int main() {
  bool first = true;
  std::printf("{\"records\":[");
  sc::workload dense{.layers = 4, .micro_batches = 4, .hidden = 4096, .ffn_hidden = 14336};
  records<ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>>>("dense_h4096_tp4", dense, first);
  records<ov::config<ov::dp<8>, ov::distributed_optimizer<>>>("dense_h4096_dp8", dense, first);
  records<ov::config<ov::pp<4>>>("dense_h4096_pp4_m4", dense, first);
  sc::workload moe{.layers = 4, .micro_batches = 4, .hidden = 4096, .experts = 64, .top_k = 8,
                   .moe_ffn_hidden = 768};
  records<ov::config<ov::ep<8>, ov::dp<8>, ov::num_moe_experts<64>, ov::precision<ov::dtype::bf16>,
                     ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>,
                     ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>>>(
      "moe_h4096_top8_ep8", moe, first);
  std::printf("]}\n");
}
