// CONFIGS distinct variants of the quick-start MoE config (all four families), each instantiated
// through cfg::resolved and cfg::notes.
#include <overlap/overlap.hpp>

#include <utility>

namespace ov = overlap;

template <int K>
using cfg = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::pp<4>, ov::vpp<2>, ov::dp<8>, ov::ep<16>, ov::etp<1>,
                       ov::distributed_optimizer<>, ov::num_moe_experts<128 * K>,
                       ov::moe_token_dispatcher_type<ov::dispatcher::alltoall>, ov::precision<ov::dtype::bf16>,
                       ov::tp_comm_overlap<>, ov::overlap_moe_expert_parallel_comm<>, ov::delay_wgrad_compute<>>;

template <int... K>
int use(std::integer_sequence<int, K...>) {
  return ((cfg<K + 1>::resolved.overlap_moe_expert_parallel_comm + cfg<K + 1>::notes.size()) + ...);
}

int main() { return use(std::make_integer_sequence<int, CONFIGS>{}) > 0 ? 0 : 1; }
