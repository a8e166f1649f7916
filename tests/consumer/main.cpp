#include <overlap/overlap.hpp>

namespace ov = overlap;
using cfg =
    ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::dp<4>, ov::distributed_optimizer<>>;

int main() { return cfg::resolved.overlap_grad_reduce && cfg::resolved.tp_comm_overlap ? 0 : 1; }
