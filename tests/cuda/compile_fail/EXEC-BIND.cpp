// EXPECT: [EXEC-BIND]
// A schedule whose programs contain fc2_fprop, with kernels bound for every other compute type:
// one error, naming fc2_fprop in its instantiation line. The control binds it too.
#include <overlap/cuda/bind.hpp>

namespace oc = overlap::cuda;
using overlap::schedule::op_type;

struct fake_schedule {
  static constexpr overlap::schedule::op_type_set op_types =
      overlap::schedule::op_type_set{}.add(op_type::fc1_fprop).add(op_type::fc2_fprop).add(op_type::tp_all_gather);
};

void gemm(const overlap::schedule::op_key&, int) {}

auto table = oc::kernels_for<fake_schedule>(oc::on<op_type::fc1_fprop>(gemm)
#ifdef OVERLAP_CONTROL
                                                ,
                                            oc::on<op_type::fc2_fprop>(gemm)
#endif
);
