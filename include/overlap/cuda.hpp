#pragma once
/// @file
/// The CUDA/NCCL executor: runs a rank's step program (`overlap::schedule::program`) on CUDA
/// streams with the trainer's NCCL communicators, buffers and kernels; see `basic_executor` for
/// the pre-flight, the dispatch, the watchdog and CUDA graphs. The only public header that
/// includes CUDA or NCCL; link `overlap::cuda`.
///
/// ```
/// using overlap::cuda::on;
/// using overlap::schedule::op_type;
/// overlap::cuda::executor::resources r;
/// r.comms["dp"] = dp_comm;                                      // the trainer's ncclComm_t
/// r.kernels = overlap::cuda::kernels_for<cfg::schedule>(        // compile-time: every type bound
///     on<op_type::fc1_fprop, op_type::fc2_fprop>(gemm_forward), // f(const op_key&, cudaStream_t)
///     ...);
/// r.buffers = [&](const overlap::schedule::op& o) { return buffer_of(o.key); };  // at pre-flight
/// overlap::cuda::executor step(program, std::move(r));          // pre-flight; throws on a gap
/// step.run();
/// step.wait();                                                  // watchdog: abort, never hang
/// const auto t = step.run_timed(10);  // per op: median GPU time; t.us_per_op() for the
///                                     // measured-cost writer (sim/cost/measured_cost_writer.hpp)
/// ```

#include <overlap/cuda/bind.hpp>
#include <overlap/cuda/cuda_api.hpp>
#include <overlap/cuda/error.hpp>
#include <overlap/cuda/executor.hpp>
#include <overlap/cuda/resources.hpp>
#include <overlap/cuda/timing.hpp>
#include <overlap/cuda/watchdog.hpp>

namespace overlap::cuda {

/// The executor on the real CUDA runtime and NCCL.
using executor = basic_executor<cuda_api>;
/// A communication op's buffers for `executor`.
using buffer = basic_buffer<cuda_api>;
/// What the trainer supplies to `executor`.
using resources = basic_resources<cuda_api>;
/// The watchdog on the real CUDA runtime and NCCL.
using watchdog = basic_watchdog<cuda_api>;

}  // namespace overlap::cuda
