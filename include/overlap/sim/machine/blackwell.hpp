#pragma once
/// @file
/// Blackwell presets: HGX B200 and B300 nodes (8 GPUs) and GB200 / GB300 NVL72 racks (72 GPUs in
/// one NVLink domain), from published figures. Unlike the H100 and H200 presets they carry no
/// measured profile: compute is the analytic model (tiles and waves at an achieved GEMM
/// efficiency, grouped GEMMs and attention by their flops), so their times are as good as the few
/// public kernel measurements below; `--profile` (overlap-profile on the GPU) replaces them.
/// Quantized GEMMs (fp8 and fp4 recipes) run at their measured speedups over bf16, below.
///
/// Sources (per GPU; tensor rates dense, NVIDIA's system pages quote them with sparsity, halved
/// here):
/// - SMs: B200 148 (chipsandcheese.com "Nvidia's B200", 74 of 80 per die; pytorch/ao PR #4002),
///   B300 148 and GB200 / GB300 152 as the devices report them in public kernel repositories
///   (NVIDIA publishes no per-product count; Blackwell Ultra's 160 is the full die).
/// - bf16 dense: 2,250 TFLOP/s B200 and B300, 2,500 GB200 and GB300 (NVIDIA's GB200 NVL72 / HGX
///   B200 table: 5 and 4.5 PF with sparsity; developer.nvidia.com "Inside NVIDIA Blackwell Ultra").
/// - HBM3e capacity per GPU: 180 GB B200 (HGX B200: 1.4 TB for 8), 288 GB B300 and GB300
///   (Blackwell Ultra), 186 GB GB200 (GB200 NVL72: 13.4 TB for 72); NVIDIA's product pages.
/// - HBM3e: 7.7 TB/s B200 (pytorch/ao PR #4002: a 7,680-bit bus at 3,996 MHz), 8 TB/s the others
///   (NVIDIA product pages). Memory-bound kernels: CUB's transform reaches 6.72 TB/s on B200
///   (NVIDIA/cccl PR #7391): 0.876.
/// - GEMM: torch.matmul bf16 at 8192^3 reaches 1.42 PF on B200 (pytorch/ao PR #2427): 0.631 of
///   peak; no bf16 figure was found for GB200, B300 or GB300, the B200's fraction is used.
///   Blackwell GEMMs schedule tiles dynamically (CUTLASS "Blackwell Cluster Launch Control":
///   resident clusters take work from those not yet launched), so a GEMM does not hold SMs that a
///   communication kernel waits for, unlike Hopper's persistent kernels. Tiles: Hopper's 128 x 256
///   per SM, no Blackwell figure used.
/// - Grouped (MoE) GEMMs: no TFLOP/s figure found on Blackwell; FBGEMM's fp8 grouped GEMM runs
///   about 2x the H100's on B200 (pytorch/FBGEMM PR #4172), as the peaks do: the H100's fraction,
///   0.245.
/// - Quantized GEMMs, casts included: a transformer layer's GEMMs on B300 run 1.42x bf16 in
///   MXFP8, the Blackwell recipes' fp8, and 1.98x in NVFP4 (kernel against kernel 1.83x and
///   3.48x; TransformerEngine docs/examples/gemm_profiling/gemm_profiling.rst); B300 and GB300
///   use them, fp8 all four. B200 and GB200 have 9 PF of fp4 to the B300's 15: their kernel runs
///   MXFP4 at 8192^3 at 5,239 TFLOP/s with cuBLASLt (deepseek-ai/DeepGEMM PR #348) to bf16's best
///   1,745 (the MAMF table of stas00/ml-engineering, compute/accelerator/README.md), 3.0x, and
///   with the B300's cast time (1 / 1.98 - 1 / 3.48 of the bf16 time) 1.81x. Grouped GEMMs take
///   the same factors (torchao's MXFP8 grouped GEMM, casts included, runs 1.19-1.81x bf16 on
///   B200: pytorch/ao torchao/prototype/moe_training/README.md).
/// - Attention: FlashAttention-4 bf16 forward reaches 1,613 TFLOP/s on B200 (arXiv 2603.05451;
///   together.ai's blog: 1,605): 0.717. No backward figure was extracted: the H100's ratio of
///   backward to forward efficiency (0.449 / 0.675) gives 0.477.
/// - Clocks: FlashAttention-4 back to back drops a B200 from 1,965 to ~1,580 MHz at ~1,000 W
///   (flashinfer-ai/flashinfer PR #2899); the same ratio is assumed for the others (no sustained
///   figure found), at their measured maxima (GB200 2,062, B300 2,032, GB300 2,070 MHz: public
///   kernel repositories, sgl-project/sglang PR #28460).
/// - NVLink 5: 900 GB/s per direction per GPU; NCCL models 40.1 GB/s per link, 721.8 GB/s for 18
///   (nccl src/graph/topo.h, SM100_NVLINK_BW). All-reduce reaches 830 GB/s bus bandwidth on 8
///   B200 (NVIDIA/nccl issue #1807) and 835-847 GB/s over a 72-GPU GB200 rack (coreweave/nccl-tests
///   PR #43); no all-gather or reduce-scatter figure was found: NCCL's 720 GB/s, the H100's ratio
///   of other collectives to all-reduce. No NCCL send/recv figure either: half of it, as on the
///   H100. Copy-engine peer transfers: ~770 GB/s on GB200 (Azure/AI-benchmarking-guide issue #7).
/// - Network: one NIC per GPU; ConnectX-7 400 Gb/s (B200, GB200) reaches 48-49 GB/s
///   (NVIDIA/nccl-tests issue #267): 48. ConnectX-8 800 Gb/s (B300, GB300): no measurement
///   found, twice the ConnectX-7's, 96.
/// - Launch: 3.0-3.3 us per raw kernel launch on a GB200 host (meta-pytorch/tritonbench PR
///   #1017): 3. Latencies, SMs of communication kernels: the H100's (no Blackwell figure).
/// - Communication kernels packed in a GEMM's tail, and their slowdown beside compute, were
///   measured on an H200 only: not modelled here.
/// - Compute through a training step (`machine::compute_speed`): no public figure gives the
///   sustained clock or the kernels' achieved fraction of peak of these products in training, so
///   their product over what the figures above give is derived from NVIDIA's published 26.02
///   steps by bench/published/calibrate.py (bench/published/calibration.json; the 25.11 and 25.09
///   rows are its held-out check): B200 0.989, B300 0.936, GB200 1.282, GB300 1.663, the median
///   row of each GPU on the published throughput. The B200's, close to 1, agrees with its kernel
///   figures; the NVL72 parts' say their compute runs well above them (higher power limits than
///   the HGX parts' would keep clocks up: a cause assumed, not measured), GB300's near the most
///   the two unknowns allow (1.68: the boost clock throughout, GEMMs at 0.85 of peak).

#include <string>
#include <utility>

#include <overlap/sim/machine/machine.hpp>

namespace overlap::sim {

namespace detail {
/// What the four Blackwell presets share (the B200's kernels and links).
inline machine blackwell(std::string name, int sms, double bf16_tflops, double hbm_tbs, double hbm_gb, int domain,
                         double nic_gbs, double max_clock_mhz, double fp4_speedup, double compute_speed) {
  return machine{.name = std::move(name),
                 .sms = sms,
                 .peak_flops_per_us = bf16_tflops * 1e6,
                 .memory_bytes_per_us = hbm_tbs * 1e6,
                 .memory_capacity_bytes = hbm_gb * 1e9,
                 .gpus_per_node = default_ranks_per_domain(domain),
                 .nvlink_domain = domain,
                 .nvlink_bytes_per_us = 720e3,
                 .nvlink_latency_us = 2.5,
                 .network_bytes_per_us = nic_gbs * 1e3,
                 .network_latency_us = 8,
                 .launch_us = 3,
                 .comm_sms = 16,
                 .p2p_sms = 2,
                 .gemm_efficiency = 0.631,
                 .fp8_gemm_speedup = 1.42,
                 .fp4_gemm_speedup = fp4_speedup,
                 .gemm_tile_m = 128,
                 .gemm_tile_n = 256,
                 .gemm_tile_k = 64,
                 .persistent_gemms = false,
                 .grouped_gemm_efficiency = 0.245,
                 .attention_forward_efficiency = 0.717,
                 .attention_backward_efficiency = 0.477,
                 .memory_efficiency = 0.876,
                 .p2p_bytes_per_us = 360e3,
                 .copy_engine_bytes_per_us = 770e3,
                 .benchmark_clock_mhz = max_clock_mhz,
                 .sustained_clock_mhz = max_clock_mhz * 1580 / 1965,
                 .compute_speed = compute_speed};
}
}  // namespace detail

/// An 8-GPU HGX B200 node.
inline machine b200_node() { return detail::blackwell("b200", 148, 2250, 7.7, 180, 8, 48, 1965, 1.81, 0.989); }
/// An 8-GPU HGX B300 node.
inline machine b300_node() { return detail::blackwell("b300", 148, 2250, 8, 288, 8, 96, 2032, 1.98, 0.936); }
/// A GB200 NVL72 rack: 72 GPUs in one NVLink domain, of which a job fills 64 (with_placement).
inline machine gb200_nvl72() { return detail::blackwell("gb200", 152, 2500, 8, 186, 72, 48, 2062, 1.81, 1.282); }
/// A GB300 NVL72 rack: 72 GPUs in one NVLink domain, of which a job fills 64 (with_placement).
inline machine gb300_nvl72() { return detail::blackwell("gb300", 152, 2500, 8, 288, 72, 96, 2070, 1.98, 1.663); }

}  // namespace overlap::sim
