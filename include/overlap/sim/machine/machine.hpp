#pragma once
/// @file
/// A model of the machine a step runs on, and presets for H100 and H200 nodes. Every constant of
/// the presets says where it was measured or published, or that no public figure exists. A
/// machine with a profile (`profile.hpp`: measured kernel times) takes its compute from it; the
/// H100 and H200 presets use the H200 profile built in (`profiles/h200.hpp`).

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <overlap/sim/machine/profile.hpp>
#include <overlap/sim/machine/profiles/h200.hpp>

namespace overlap::sim {

/// Per-GPU figures. Bandwidths are per direction in bytes per microsecond (1 GB/s = 1000 bytes/us);
/// latencies and costs in microseconds. Efficiencies are the achieved fraction of a peak; the
/// defaults (1, no tiles) make a machine whose ops run exactly at its peaks.
struct machine {
  std::string name;
  int sms = 132;                     ///< streaming multiprocessors per GPU
  double peak_flops_per_us = 0;      ///< dense bf16 tensor throughput of the whole GPU
  double memory_bytes_per_us = 0;    ///< HBM bandwidth
  double memory_capacity_bytes = 0;  ///< HBM a GPU has (0: not said)
  /// GPUs of one NVLink domain that a job's ranks fill, in rank order, before the next domain:
  /// the placement in force. Ranks r and r' share NVLink when r / gpus_per_node equals
  /// r' / gpus_per_node; between domains they talk over the NIC. An HGX node is its own domain
  /// (8); on an NVL72 rack the scheduler gives a job whole power-of-two blocks of a domain
  /// (`default_ranks_per_domain`), so 64 of its 72 GPUs unless told otherwise (`with_placement`).
  int gpus_per_node = 8;
  /// GPUs one NVLink domain holds: 8 in an HGX node, 72 in an NVL72 rack (0: gpus_per_node).
  int nvlink_domain = 0;
  double nvlink_bytes_per_us = 0;   ///< per GPU, per direction, inside a node: collectives' bus bandwidth
  double nvlink_latency_us = 0;     ///< per ring step / message inside a node
  double network_bytes_per_us = 0;  ///< per GPU, per direction, across nodes
  double network_latency_us = 0;
  double launch_us = 0;  ///< host cost to issue one op (kernel launch, NCCL call)
  double event_us = 0;   ///< host cost to record an event or wait on one (0: launch_us)
  int comm_sms = 0;      ///< SMs a collective kernel occupies
  int p2p_sms = 0;       ///< SMs a send or recv kernel occupies
  /// How many CTAs of a communication kernel (one per NCCL channel, one per SM it asks for) fit
  /// on one SM. A kernel dispatched while a persistent GEMM on another hardware queue holds the
  /// SMs is placed on the first SMs the GEMM's tail frees, this many to an SM, and keeps that
  /// placement for its life (0: not modelled; it waits for the GEMM's end and spreads).
  int comm_ctas_per_sm = 0;
  /// What one SM moves with several CTAs of a communication kernel, in CTAs' worth (one CTA alone
  /// on an SM moves 1): a kernel packed `comm_ctas_per_sm` to an SM transfers at
  /// SMs x min(CTAs per SM, this) / its CTAs of its spread rate.
  double comm_sm_share = 1;
  /// How much slower a communication kernel moves beside compute kernels that fill the rest of
  /// the GPU than alone (0.17: 17 % slower), from the memory traffic they share; beside compute
  /// on a fraction f of the other SMs, f of that. 0: no interference.
  double comm_interference = 0;
  /// How much slower a compute kernel runs beside communication that moves the NVLink rate in and
  /// out of this GPU (what the usual communication kernel moves alone) than alone on the same SMs
  /// (0.05: 5 % slower), from the HBM and L2 traffic they share; in proportion to the bytes per
  /// microsecond the transfers in flight move (half of it each way: a send reads, a receive
  /// writes). 0: no interference.
  double compute_interference = 0;
  double gemm_efficiency = 1;  ///< achieved fraction of the tensor peak by a large GEMM
  /// Quantized GEMMs (schedule::gemm_format): how much faster a transformer layer's GEMMs run in
  /// fp8 / fp4 than in bf16 as measured, Transformer Engine's casts of their operands included
  /// (not the peaks' ratio), for dense and grouped GEMMs alike. 0: no tensor cores (or no
  /// measured rate) for the format; a step that uses it is refused.
  double fp8_gemm_speedup = 0;
  double fp4_gemm_speedup = 0;
  int gemm_tile_m = 0;  ///< output tile one SM computes per wave (0: no wave model)
  int gemm_tile_n = 0;
  int gemm_tile_k = 0;  ///< k per tile step: a split-K slice is at least one (0: no split-K)
  /// GEMMs run as persistent kernels: one resident block per SM loops over the output tiles, so a
  /// GEMM holds the SMs it started on until it ends and another kernel gets them only then (false:
  /// its blocks retire at the end of each wave and free SMs go to whoever waits).
  bool persistent_gemms = false;
  /// Routed experts' grouped GEMMs (all local experts in one kernel), by their flops.
  double grouped_gemm_efficiency = 1;
  double attention_forward_efficiency = 1;   ///< core attention (FlashAttention-class), forward
  double attention_backward_efficiency = 1;  ///< and backward (2.5 forwards of flops)
  double memory_efficiency = 1;              ///< achieved fraction of HBM bandwidth by memory-bound kernels
  double p2p_bytes_per_us = 0;               ///< NCCL send/recv over NVLink (0: nvlink_bytes_per_us)
  double copy_engine_bytes_per_us = 0;       ///< copy-engine peer transfers over NVLink (0: nvlink)
  /// Tensor throughput follows the SM clock. The efficiencies above are kernel benchmarks, run at
  /// `benchmark_clock_mhz`; a training step keeps the GPU at its power limit for seconds, where
  /// the SMs run at `sustained_clock_mhz`. Compute-bound time scales by their ratio; HBM and the
  /// links keep their own clocks. 0 in either: the benchmarks' clock throughout.
  double benchmark_clock_mhz = 0;
  double sustained_clock_mhz = 0;
  /// The analytic model's compute rate over what the efficiencies and clocks above give: 1 where
  /// they are measured; for a GPU without kernel or clock measurements, derived from published
  /// steps (blackwell.hpp, bench/published/calibrate.py); or a what-if (overlap-plan
  /// --compute-speed). Memory-bound kernels and links keep their own rates; a profile's measured
  /// times stand as measured.
  double compute_speed = 1;
  /// Measured kernel times; the cost model reads compute from them, and the efficiencies, tiles
  /// and clocks above only to stretch a time on fewer SMs (none: the analytic model throughout).
  std::shared_ptr<const sim::profile> profile{};
  /// Which attention table of the profile core attention reads: Transformer Engine's fused
  /// attention on Hopper is cuDNN's ("flash": FlashAttention 2, as PyTorch's SDPA runs it).
  std::string attention_backend = "cudnn";
  /// A training step: the GPU stays at its power limit for seconds, so compute runs at the
  /// sustained clock (the profile: at most its sustained rate). False: short bursts, as kernel
  /// benchmarks (and the profile's tables) were run.
  bool sustained_load = true;
  /// GPUs one NVLink domain holds.
  int domain_gpus() const { return nvlink_domain > 0 ? nvlink_domain : gpus_per_node; }
  double clock_ratio() const {
    return sustained_load && benchmark_clock_mhz > 0 && sustained_clock_mhz > 0
               ? sustained_clock_mhz / benchmark_clock_mhz
               : 1;
  }
};

/// The GPUs of a `domain`-GPU NVLink domain a job fills by default: the largest power of two that
/// fits, as NVIDIA's schedulers hand out NVL72 racks (Slurm's block topology: 16 compute trays of
/// 4 GPUs, 64 of 72, per segment); an HGX node's 8 whole.
constexpr int default_ranks_per_domain(int domain) {
  int block = 1;
  while (block * 2 <= domain) block *= 2;
  return domain > 0 ? block : 0;
}

/// `m` with its job's ranks filling `ranks_per_domain` GPUs of each NVLink domain (the machine's
/// placement, `machine::gpus_per_node`). Throws std::invalid_argument, naming the domain, unless
/// 1 <= ranks_per_domain <= the domain's GPUs.
inline machine with_placement(machine m, int ranks_per_domain) {
  const int domain = m.domain_gpus();
  if (ranks_per_domain < 1 || ranks_per_domain > domain)
    throw std::invalid_argument("placement: " + std::to_string(ranks_per_domain) + " GPUs per NVLink domain on " +
                                m.name + ", whose domain holds " + std::to_string(domain) + ": give 1 to " +
                                std::to_string(domain));
  m.nvlink_domain = domain;
  m.gpus_per_node = ranks_per_domain;
  return m;
}

/// `m` with what the two-stream probe `c` measured of communication kernels' SMs: the copy kernel
/// alone (one CTA to an SM) against the same kernel packed on ceil(CTAs / per SM) SMs in a GEMM's
/// tail (`comm_ctas_per_sm`, `comm_sm_share`) and beside a GEMM on the other SMs
/// (`comm_interference`), and the GEMM beside the copy against the GEMM alone
/// (`compute_interference`). Unchanged where the probe did not measure them.
inline void with_sm_probe(machine& m, const concurrency_probe& c) {
  if (c.copy_ctas <= 0 || c.copy_alone_us <= 0) return;
  if (c.copy_ctas_per_sm > 0 && c.copy_packed_us > 0) {
    const int packed_sms = (c.copy_ctas + c.copy_ctas_per_sm - 1) / c.copy_ctas_per_sm;
    m.comm_ctas_per_sm = c.copy_ctas_per_sm;
    m.comm_sm_share =
        std::min<double>(c.copy_ctas_per_sm, c.copy_ctas * c.copy_alone_us / (packed_sms * c.copy_packed_us));
  }
  if (c.copy_beside_gemm_us > 0) m.comm_interference = std::max(0.0, c.copy_beside_gemm_us / c.copy_alone_us - 1);
  // Side by side (the copy issued first, then the GEMM), the GEMM runs on the SMs the copy leaves
  // while the copy runs, then on all of them: what it did beside the copy is its time alone less
  // what was left after the copy ended. Against its rate on those SMs alone, that is its slowdown,
  // there with the copy moving copy_alone / copy_beside of its rate alone.
  const double beside = c.gemm_alone_us - (c.side_by_side_us - c.copy_beside_gemm_us);
  if (c.copy_beside_gemm_us > 0 && c.side_by_side_us > 0 && c.gemm_alone_us > 0 && beside > 0 && c.copy_ctas < m.sms) {
    const double sm_share = static_cast<double>(m.sms - c.copy_ctas) / m.sms;
    const double slowdown = sm_share * c.copy_beside_gemm_us / beside - 1;
    m.compute_interference = std::max(0.0, slowdown * c.copy_beside_gemm_us / c.copy_alone_us);
  }
}

/// `m` computing as profile `p` measured (its SMs, memory rate and, where measured, the host's
/// launch and event costs).
inline machine with_profile(machine m, std::shared_ptr<const sim::profile> p) {
  if (p) {
    m.sms = p->sms;
    m.memory_bytes_per_us = p->memory_bytes_per_us;
    m.memory_efficiency = 1;
    if (p->launch_us > 0) m.launch_us = p->launch_us;
    if (p->event_record_us > 0) m.event_us = p->event_record_us;
    with_sm_probe(m, p->concurrency);
  }
  m.profile = std::move(p);
  return m;
}

/// An 8-GPU H100 SXM node. Sources:
/// - 132 SMs, 989.4 TFLOP/s dense bf16, 3.35 TB/s HBM3: NVIDIA H100 datasheet.
/// - GEMMs: cuBLAS bf16 reaches 797.8 TFLOP/s at 8192^3 (pranjalssh/fast.cu README; 797.5 in the
///   size sweep of zzc0721/torch-performance-test-data issue #79), 0.806 of peak. Hopper's best
///   bf16 kernels compute 128 x 256 output tiles, one per SM per wave (fast.cu kernels 5-7;
///   cuBLAS sm90 kernel names show 128x128 and 256x128 tiles). With those tiles the model gives
///   192 / 767 / 767 TFLOP/s at 1024^3 / 2048^3 / 4096^3 against the sweep's measured 177 / 677 /
///   789.
/// - Split-K: a GEMM whose output tiles leave SMs idle splits k into slices of whole 64-deep k
///   tiles (CUTLASS's sm90 bf16 kernels step k by 64: TileShape 128 x 256 x 64 / 128 x 128 x 64 in
///   its Hopper examples) and reduces the fp32 partials; cublasLt exposes it as
///   CUBLASLT_ALGO_CONFIG_SPLITK_NUM. Measured on Hopper (H20, bf16, k 8192): 128 x 256 rises from
///   26 to 42 TFLOP/s with split-K, 128 x 1024 stays at 76 (deepseek-ai/DeepGEMM PR #186). No H100
///   measurement at a TP chunk's shape (512 x 768 x 4096) was found; the model picks the split
///   that its tile time and the partials' memory traffic make fastest, with no constant of its own.
/// - Hopper's GEMM kernels are persistent (CUTLASS sm90 TMA warp-specialized cooperative and
///   ping-pong kernels launch one CTA per SM that loops over the tiles; CUTLASS's "Blackwell
///   Cluster Launch Control" page: with persistent scheduling "the number of SMs this kernel can
///   utilize is unknown in real time", which Blackwell's dynamic scheduler fixes). So a
///   communication kernel launched during a GEMM on another hardware queue gets SMs only in the
///   GEMM's tail, packed on a few of them for its life (measured on an H200: `with_sm_probe`);
///   Megatron asserts CUDA_DEVICE_MAX_CONNECTIONS=1 for TP/CP overlap before Blackwell and says the
///   requirement "no longer exists since the Blackwell architecture" (arguments.py).
/// - Routed experts: a fused MoE forward of grouped GEMMs (torch._grouped_mm, CUTLASS) reaches
///   242.1 TFLOP/s on H100 at Qwen3-30B-A3B's shape (32,768 tokens, hidden 2048, expert FFN 768,
///   128 experts, top-8; the Triton kernel 215.1): ByteDance-Seed/VeOmni PR #460. 0.245 of peak. A
///   tuned Triton kernel with fused SwiGLU reaches 413 forward+backward at that shape
///   (linkedin/Liger-Kernel PR #1294): the figure is the library kernels', not the best known. One
///   figure for every expert shape: no sweep over shapes was found.
/// - Attention: FlashAttention-3, causal, head dim 128, 4k tokens, bf16: forward 1237 us and
///   backward 4643 us for B 4, H 48 (meta-pytorch/tritonbench PR #1267), i.e. ~667 and ~444
///   TFLOP/s with the backward counted as 2.5 forwards (Dao-AILab/flash-attention issue #1525):
///   0.675 and 0.449 of peak.
/// - Memory-bound kernels: STREAM on an H100 80GB (Azure ND H100 v5) copies at 2.90 TB/s and runs
///   Triad at 2.97 of 3.35 (samuel-bohman/AI-benchmarking-guide, Azure_Results); up to 3,000 GB/s
///   on the same HBM3 of an H800 SXM5 (FlashMLA README): 0.9. No public H200 figure was found.
/// - NVLink: ring collectives inside a node reach ~360 GB/s bus bandwidth ("exactly what we'd
///   expect on H100", NVIDIA/nccl-tests issue #326; ~370 in issue #212); NCCL send/recv between
///   two GPUs plateaus at ~180 GB/s (nccl-tests issue #268, a user's measurement); copy-engine
///   peer writes reach 371-377 GB/s one way (NVIDIA/nccl issue #1264).
/// - Network: one 400 Gb/s NDR NIC per GPU; expect 46-48 GB/s per NIC (NCCL maintainer,
///   nccl-tests issues #290 and #267): 47.
/// - Latency: a ring all-reduce of a few bytes over 8 GPUs takes ~34 us in 14 ring steps on a
///   DGX-A100 (nccl-tests issue #123), ~2.5 us a step; no public per-step figure for H100 or for the
///   network hop was found, 8 us is an estimate.
/// - Launch: 3.0-3.3 us per raw kernel launch (meta-pytorch/tritonbench PR #1017): 3.
/// - SMs of communication: NCCL runs one CTA per channel, ~16 channels on a DGX with 8 NICs
///   (NVIDIA/nccl issue #689); no public figure for send/recv kernels, 2 is an estimate.
/// - Clocks: the kernel figures above are short benchmark runs, which hold the maximum boost
///   clock, 1980 MHz (H100 SXM5 datasheet; the "1.98 GHz baseline" of deepseek-ai/DeepGEMM PR
///   #44); none of them states its clock, so that is an assumption. Under sustained tensor load
///   the SXM5 part reaches its 700 W limit and lowers the clock: "from 1980MHz to 1575 MHz" while
///   overlapping computation and communication (H800, the H100's SXM5 board, deepseek-ai/DeepGEMM
///   issue #120; locking it at 1575 did not help), and to 1.3 GHz in an FP8 GEMM stress test (PR
///   #44). 1575 for bf16 training. (The dense bf16 peak of 989.4 TFLOP/s is 132 SMs x 4,096
///   flops per clock at 1830 MHz: MFU below still divides by it.)
///
/// - fp8 GEMMs: a transformer layer's GEMMs with current scaling, casts included, run 1.58x bf16
///   on an H200 NVL (1.90x kernel against kernel; delayed scaling 1.69x, block scaling 1.40x:
///   TransformerEngine docs/examples/gemm_profiling/gemm_profiling.rst). At 8192^3 on an H100
///   at 500 W: 931.8 TFLOP/s with the cast, 1,125.5 without, bf16 585.2 (pytorch/FBGEMM PR
///   #2546): 1.59x. Applied to grouped GEMMs too (no Hopper grouped figure was found). Hopper has
///   no fp4 tensor cores: fp4 is refused.
/// Compute comes from the H200 profile (`h200_profile()`): the H100 SXM is the same GH100 die with
/// the same 132 SMs, clocks and 700 W limit, and differs in its memory (HBM3, 3.35 TB/s against
/// HBM3e, 4.8), which memory-bound kernels and grouped GEMMs read from the figure above. The
/// efficiencies, tiles and clocks below stretch a time on fewer SMs, and are the whole model of a
/// machine built from this preset without the profile.
inline machine h100_node() {
  machine m{.name = "h100",
            .sms = 132,
            .peak_flops_per_us = 989.4e6,
            .memory_bytes_per_us = 3.35e6,
            .memory_capacity_bytes = 80e9,
            .gpus_per_node = 8,
            .nvlink_bytes_per_us = 360e3,
            .nvlink_latency_us = 2.5,
            .network_bytes_per_us = 47e3,
            .network_latency_us = 8,
            .launch_us = 3,
            .comm_sms = 16,
            .p2p_sms = 2,
            .gemm_efficiency = 0.806,
            .fp8_gemm_speedup = 1.58,
            .gemm_tile_m = 128,
            .gemm_tile_n = 256,
            .gemm_tile_k = 64,
            .persistent_gemms = true,
            .grouped_gemm_efficiency = 0.245,
            .attention_forward_efficiency = 0.675,
            .attention_backward_efficiency = 0.449,
            .memory_efficiency = 0.9,
            .p2p_bytes_per_us = 180e3,
            .copy_engine_bytes_per_us = 374e3,
            .benchmark_clock_mhz = 1980,
            .sustained_clock_mhz = 1575,
            .profile = h200_profile()};
  with_sm_probe(m, m.profile->concurrency);  // the same GH100 SMs
  return m;
}

/// An 8-GPU H200 node: the H100's links and host; compute and memory as measured on an H200
/// (`h200_profile()`: its GEMM, grouped-GEMM and attention tables, its sustained rate at the power
/// limit, and its device copy at 4.27 TB/s of the 4.8 TB/s HBM3e of NVIDIA's product page), and
/// its 141 GB (the H100 SXM's 80 GB: the same page).
inline machine h200_node() {
  machine m = with_profile(h100_node(), h200_profile());
  m.name = "h200";
  m.memory_capacity_bytes = 141e9;
  return m;
}

}  // namespace overlap::sim
