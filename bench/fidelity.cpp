// Fidelity: the simulator's predictions for published measurements, with one machine model (the
// H100 preset: compute from the H200 profile measured on the same GH100 die, the H100's memory;
// no constant set per case). Prints {"records":[...]}: each case's predicted change
// (or MFU), the published figure and the band issue 9 asks for, and whether the prediction lies in
// it. The cases:
// - Qwen3-30B-A3B on two H100 nodes (EP16 x DP16, alltoall dispatcher, bf16): EP overlap on vs
//   off, published -24 % (41.25 -> 31.31 s per step, Megatron-Bridge
//   docs/training/communication-overlap.md); band -14 % .. -34 %.
// - the same plus delay_wgrad_compute: published neutral (31.31 -> 31.20 s); band +-3 %.
// - EP4 with its all-to-all inside a node: "small-EP alltoall MoE runs can get slower because
//   scheduling overhead is larger than the communication being hidden" (same document); measured
//   on two nodes with alltoall: flat at GBS 8, ~13 % slower at GBS 64 (Megatron-Bridge
//   skills/perf-techniques/expert-parallel-overlap/card.yaml, which says to avoid it at EP <= 4 on
//   <= 2 nodes). The run is the card's command: tp2 (sequence parallel) pp2 vpp4 ep4, micro-batches
//   of 1, on 16 GPUs, so dp4; the recipe's expert tp 1 and sequence 4,096 (Bridge's
//   qwen3_30b_a3b_pretrain_config). Each pipeline stage fills one node, so every EP group of 4 is
//   inside it. GBS 8 is 2 micro-batches per rank, GBS 64 16. Bands: flat within +-5 % at GBS 8;
//   no better than -5 % at GBS 64 (the band for in-node EP <= 4).
// - EP8 inside one node (dp8 ep8): no A/B is published; the record extrapolates the guidance,
//   unpinned, with the same band.
// - TP comm overlap at CUDA_DEVICE_MAX_CONNECTIONS 1 vs 8: upstream requires 1. At 8 a reduce-
//   scatter dispatched while the next split's GEMM holds every SM is placed in that GEMM's tail,
//   packed four CTAs to an SM, and runs slow for its life (measured on an H200: bench/concurrency);
//   band: 1 is faster.
// - the dense example's model-flops utilization: public Megatron-Core runs on H100 report 41-48 %
//   (NVIDIA/Megatron-LM README, performance benchmarking); band 30 % .. 60 %.
// - NVIDIA's published bf16 Llama 3.1 runs on DGX-H100 (NVIDIA/dgxc-benchmarking, llama3.1
//   README_8b.md and README_70b.md, NeMo 24.09, GBS 128, MBS 1, sequence 8192): 8B on 8 GPUs
//   (TP1 PP1 CP2) in 12.91 s per step, 70B on 64 GPUs (TP4 PP4 CP2 VP5) in 14.72 s. Context
//   parallelism is not modelled: CP2 x DP runs here as twice the data-parallel ranks with half the
//   micro-batches each, the same tokens per GPU (CP's attention exchange left out). Whole models
//   and every micro-batch, simulated once per class of symmetric ranks. Measures: the step time
//   against the published one (band +-15 %) and the MFU against the published run's as we count
//   it (causal attention: its flops over the published step), in the same band.
// - Megatron-Bridge's published Llama 3 70B SFT runs in fp8 (docs/performance-summary.md, 26.06
//   container, first in commit 63b08b397; the recipe is the dump
//   llama3_70b_sft_gb200_fp8_mx_v1.yaml of Bridge's scripts/performance/dryrun_configs/): GBS 32, MBS 1,
//   sequence 4,096, 32 GPUs, the distributed optimizer with Bridge's derived DP and p2p overlaps,
//   gradients reduced in fp32. A GB200 NVL72 rack, MXFP8, TP1 PP8 VP10: 3,593 tokens/s per GPU,
//   a 1.140 s step; an H100 node, fp8 (current scaling), TP4 PP4 VP5: 1,638, 2.501 s. The
//   sequences are packed, whose attention (within each sample) is less than the full causal
//   attention simulated here. Measure: the step against the published one, band +-15 %. The
//   H100 run is held; the GB200 run is printed, not held: the Blackwell presets, built from
//   published figures without a measured profile, predict it about 30 % slow (their bf16 GEMMs
//   at 0.631 of peak from one B200 benchmark and the sustained clock 1,580 / 1,965 MHz seen
//   under FlashAttention-4 on a B200 are the suspects; a GB200 profile would settle it).
// The MoE cases simulate the whole model and 64 micro-batches of 1 per rank, once per class: GBS
// 1024 on 16 GPUs, the Bridge recipe's (Megatron-Bridge PR #5094: Qwen3-30B-A3B, 16 x H100, seq
// 4096, GBS 1024). The overlap document does not state its GBS, so the absolute step times of the
// EP16 runs are printed against it unpinned; the ratios are held.
// A pinned case that leaves its band fails the bench (exit 1); the unpinned ones are cases the
// model still misses (in-node EP overlap at GBS 64, EP8, the EP8 MoE throughput, the GB200 SFT
// step) and the EP16
// step times, whose GBS is assumed: printed, not held.
#include <cstdio>
#include <string>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/schedule/classes.hpp>
#include <overlap/sim/machine/blackwell.hpp>
#include <overlap/sim/simulate.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {
bool first = true;
bool pinned_missed = false;

void record(const char* name, const char* measure, double predicted, const char* published, double low, double high,
            bool pinned = true) {
  const bool in_band = predicted >= low && predicted <= high;
  std::printf(
      "%s{\"case\":\"%s\",\"measure\":\"%s\",\"predicted\":%.4f,\"published\":\"%s\",\"band\":[%.3f,%.3f],"
      "\"in_band\":%s,\"pinned\":%s}",
      first ? "" : ",", name, measure, predicted, published, low, high, in_band ? "true" : "false",
      pinned ? "true" : "false");
  first = false;
  pinned_missed = pinned_missed || (pinned && !in_band);
}

/// The step time, simulated once per class (the same times as in full), at the settings' own
/// connections or at `connections`.
double step_us(const ov::settings& s, const sc::workload& w, const ov::sim::cost_model& cost, int connections = 0) {
  const ov::resolved_settings r = ov::derive(s);
  ov::sim::options opt = ov::plan::options_for(r);
  if (connections > 0) opt.cuda_device_max_connections = connections;
  const sc::class_step made = sc::compose_class_step(s, r, w, cost.machine().gpus_per_node);
  const auto result = ov::sim::simulate(made.representatives, cost, made.classes, opt);
  return result.deadlock ? -1 : result.step_time_us;
}

/// Qwen3-30B-A3B: 48 layers of hidden 2048, 32 heads in 4 query groups of 128, 128 experts of
/// FFN 768, top-8, vocabulary 151,936, sequence 4,096, micro-batches of 1.
sc::workload qwen3_30b_a3b() {
  return {.num_layers = 48,
          .micro_batches = 64,
          .seq_length = 4096,
          .micro_batch_size = 1,
          .hidden_size = 2048,
          .ffn_hidden_size = 6144,
          .num_attention_heads = 32,
          .num_query_groups = 4,
          .kv_channels = 128,
          .vocab_size = 151936,
          .moe_router_topk = 8,
          .moe_ffn_hidden_size = 768};
}

ov::settings moe_settings(int ep, int dp, bool overlap, bool delay) {
  ov::settings s;
  s.data_parallel_size = dp;
  s.expert_model_parallel_size = ep;
  s.expert_tensor_parallel_size = 1;
  s.num_moe_experts = 128;
  s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
  s.precision = ov::dtype::bf16;
  s.distributed_optimizer = true;
  s.overlap_moe_expert_parallel_comm = overlap;
  if (overlap) s.delay_wgrad_compute = delay;
  return s;
}

/// The measured EP4 run (see the top): tp2 sequence parallel, pp2 vpp4, ep4 with expert tp 1, dp4,
/// alltoall, the distributed optimizer with its overlaps as the recipe sets them.
ov::settings bridge_ep4_settings(bool overlap) {
  ov::settings s = moe_settings(4, 4, overlap, false);
  s.tensor_model_parallel_size = 2;
  s.sequence_parallel = true;
  s.pipeline_model_parallel_size = 2;
  s.virtual_pipeline_model_parallel_size = 4;
  s.overlap_grad_reduce = true;
  s.overlap_param_gather = true;
  return s;
}

/// Model flops of one step per GPU over its time at the dense bf16 peak: 6 flops per parameter
/// and token (forward and backward) plus causal attention (3 x the forward's 2 s^2 a d / 2 per
/// layer and sequence), as Megatron counts MFU (no recompute).
/// A MoE layer counts its active parameters: attention, the router and top-k routed experts.
double mfu_of(const ov::settings& s, const sc::workload& w, const ov::sim::cost_model& cost, double step) {
  const double tokens = static_cast<double>(w.tokens()) * w.micro_batches * s.data_parallel_size;
  const bool moe = s.num_moe_experts.value_or(0) > 0;
  const double mlp = moe ? static_cast<double>(w.router_parameters(*s.num_moe_experts) +
                                               w.moe_router_topk * w.expert_parameters(w.moe_ffn_hidden_size))
                         : static_cast<double>(w.fc1_parameters() + w.fc2_parameters());
  const double layer = static_cast<double>(w.qkv_parameters() + w.proj_parameters()) + mlp;
  const double params = w.num_layers * layer + 2.0 * static_cast<double>(w.embedding_parameters());
  const double attention = 3 * w.num_layers * w.attention_core_flops() * w.micro_batches * s.data_parallel_size;
  const double model_flops = 6 * params * tokens + attention;
  const int gpus = s.tensor_model_parallel_size * s.pipeline_model_parallel_size * s.data_parallel_size;
  return model_flops / (step * gpus * cost.machine().peak_flops_per_us);
}
double mfu(const ov::settings& s, const sc::workload& w, const ov::sim::cost_model& cost) {
  return mfu_of(s, w, cost, step_us(s, w, cost));
}

/// A published bf16 Llama 3.1 run on DGX-H100 (see the top): settings with dp data-parallel
/// ranks (CP folded in), its workload, its GPUs and published step time.
void published_dense(const char* name, const ov::settings& s, const sc::workload& w, double published_s,
                     const char* published, const ov::sim::cost_model& cost) {
  const double step = step_us(s, w, cost);
  record((std::string(name) + "_step").c_str(), "step / published - 1", step / (published_s * 1e6) - 1, published,
         -0.15, 0.15);
  // Its MFU as we count it (causal attention) over the published step is the published MFU; the
  // predicted one is held to it within the step's band.
  const double at_published = mfu_of(s, w, cost, published_s * 1e6);
  record((std::string(name) + "_mfu").c_str(), "MFU", mfu_of(s, w, cost, step), published, at_published / 1.15,
         at_published / 0.85);
}

ov::settings dense_settings(int tp, int pp, int vpp, int dp) {
  ov::settings s;
  s.tensor_model_parallel_size = tp;
  s.sequence_parallel = tp > 1;
  s.tp_comm_overlap = tp > 1;
  s.pipeline_model_parallel_size = pp;
  if (vpp > 1) s.virtual_pipeline_model_parallel_size = vpp;
  s.data_parallel_size = dp;
  s.distributed_optimizer = true;
  s.overlap_grad_reduce = true;
  s.overlap_param_gather = true;
  s.precision = ov::dtype::bf16;
  return s;
}
}  // namespace

int main() {
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  std::printf("{\"records\":[");
  const sc::workload qwen = qwen3_30b_a3b();
  const double ep16_off = step_us(moe_settings(16, 16, false, false), qwen, h100);
  const double ep16_on = step_us(moe_settings(16, 16, true, false), qwen, h100);
  const double ep16_delay = step_us(moe_settings(16, 16, true, true), qwen, h100);
  record("qwen3_30b_a3b_ep16_two_nodes_ep_overlap", "step change", ep16_on / ep16_off - 1, "-24 % (41.25 -> 31.31 s)",
         -0.34, -0.14);
  record("qwen3_30b_a3b_ep16_two_nodes_delay_wgrad", "step change vs EP overlap", ep16_delay / ep16_on - 1,
         "neutral (31.31 -> 31.20 s)", -0.03, 0.03);
  record("qwen3_30b_a3b_ep16_two_nodes_step_off", "step / published - 1", ep16_off / 41.25e6 - 1,
         "41.25 s per step (GBS not stated; 1024 assumed)", -0.15, 0.15, false);
  record("qwen3_30b_a3b_ep16_two_nodes_step_on", "step / published - 1", ep16_on / 31.31e6 - 1,
         "31.31 s per step (GBS not stated; 1024 assumed)", -0.15, 0.15, false);
  const auto ep4_change = [&](int gbs) {
    sc::workload w = qwen;
    w.micro_batches = gbs / 4;  // dp4, micro-batches of 1
    return step_us(bridge_ep4_settings(true), w, h100) / step_us(bridge_ep4_settings(false), w, h100) - 1;
  };
  record("qwen3_30b_a3b_ep4_tp2_pp2_vpp4_16_gpus_gbs8_ep_overlap", "step change", ep4_change(8), "flat", -0.05, 0.05);
  record("qwen3_30b_a3b_ep4_tp2_pp2_vpp4_16_gpus_gbs64_ep_overlap", "step change", ep4_change(64), "~13 % slower",
         -0.05, 1.0, false);
  {
    const double off = step_us(moe_settings(8, 8, false, false), qwen, h100);
    const double on = step_us(moe_settings(8, 8, true, false), qwen, h100);
    record("qwen3_30b_a3b_ep8_one_node_ep_overlap", "step change", on / off - 1,
           "no A/B published; the guidance names EP <= 4", -0.05, 1.0, false);
  }
  // Its absolute throughput on one node without EP overlap, as NVIDIA's recipes run it: 240.5
  // TFLOP/s per GPU for the H100 bf16 recipe (NVIDIA/Megatron-LM PR #5728; Bridge: "low-200s" at
  // tp1 ep8 pp1), 277 with NeMo AutoModel at micro-batch 4 (DeepEP), i.e. 24-28 % MFU. Printed,
  // not held: with the routed experts' grouped GEMMs as measured on the H200 (560-690 TFLOP/s at
  // these shapes, where the analytic model took 242 from a published fused-MoE forward) the model
  // predicts ~40 %; the gap to the published run lies outside the kernels a profile measures (the
  // many small host-issued kernels of a Python MoE layer, the router's auxiliary loss), which the
  // programs do not yet carry.
  record("qwen3_30b_a3b_ep8_one_node_mfu", "MFU", mfu(moe_settings(8, 8, false, false), qwen, h100),
         "24-28 % (240.5-277 TFLOP/s)", 0.15, 0.40, false);
  // TP overlap with the preset for a 8192-hidden model on 4 GPUs: connections 1 against 8.
  using tp4 = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::precision<ov::dtype::bf16>,
                         ov::tp_comm_overlap_cfg<ov::ub::userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192>>;
  const sc::workload dense8k{.num_layers = 4,
                             .micro_batches = 2,
                             .seq_length = 8192,
                             .hidden_size = 8192,
                             .ffn_hidden_size = 28672,
                             .num_attention_heads = 64,
                             .num_query_groups = 8,
                             .vocab_size = 128256};
  const double one = step_us(tp4::settings, dense8k, h100, 1), eight = step_us(tp4::settings, dense8k, h100, 8);
  record("tp4_overlap_connections_1_vs_8", "step(1) / step(8) - 1", one / eight - 1, "1 is required", -1.0, -1e-9);
  // The dense examples (examples/dense_tp_pp_dp.cpp, 20 of 80 layers) and a Llama-3-8B-like
  // run on one node.
  using llama_70b = ov::config<ov::tp<4>, ov::sequence_parallel<>, ov::tp_comm_overlap<>,
                               ov::tp_comm_overlap_cfg<ov::ub::userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192>,
                               ov::pp<4>, ov::vpp<5>, ov::dp<4>, ov::distributed_optimizer<>,
                               ov::precision<ov::dtype::bf16>, ov::gpu<ov::gpu_model::h100>>;
  const sc::workload llama70{.num_layers = 20,
                             .micro_batches = 8,
                             .seq_length = 8192,
                             .hidden_size = 8192,
                             .ffn_hidden_size = 28672,
                             .num_attention_heads = 64,
                             .num_query_groups = 8,
                             .vocab_size = 128256};
  record("llama_70b_like_tp4_pp4_vpp5_dp4_mfu", "MFU", mfu(llama_70b::settings, llama70, h100), "41-48 %", 0.30, 0.60);
  // NVIDIA's bf16 Llama 3.1 runs: Llama 3.1 8B (32 layers of 4096, FFN 14336, 32 heads in 8
  // groups) and 70B (80 layers of 8192, FFN 28672, 64 heads in 8 groups), vocabulary 128,256.
  const sc::workload llama31_8b{.num_layers = 32,
                                .micro_batches = 16,
                                .seq_length = 8192,
                                .hidden_size = 4096,
                                .ffn_hidden_size = 14336,
                                .num_attention_heads = 32,
                                .num_query_groups = 8,
                                .vocab_size = 128256};
  published_dense("llama3.1_8b_bf16_8_gpus", dense_settings(1, 1, 1, 8), llama31_8b, 12.91,
                  "12.91 s per step (MFU 59.37 % counting full attention)", h100);
  const sc::workload llama31_70b{.num_layers = 80,
                                 .micro_batches = 32,
                                 .seq_length = 8192,
                                 .hidden_size = 8192,
                                 .ffn_hidden_size = 28672,
                                 .num_attention_heads = 64,
                                 .num_query_groups = 8,
                                 .vocab_size = 128256};
  published_dense("llama3.1_70b_bf16_64_gpus", dense_settings(4, 4, 5, 4), llama31_70b, 14.72,
                  "14.72 s per step (MFU 54.10 % counting full attention)", h100);
  // The fp8 Llama 3 70B SFT runs: on Blackwell and on Hopper.
  const sc::workload llama3_70b_sft{.num_layers = 80,
                                    .seq_length = 4096,
                                    .hidden_size = 8192,
                                    .ffn_hidden_size = 28672,
                                    .num_attention_heads = 64,
                                    .num_query_groups = 8,
                                    .vocab_size = 128256};
  const auto sft = [&](const char* name, int tp, int pp, int vpp, double tokens_per_gpu, const char* published,
                       const ov::sim::machine& m, bool pinned) {
    ov::settings s = dense_settings(tp, pp, vpp, 32 / (tp * pp));
    s.fp8 = true;
    s.grad_reduce_in_fp32 = true;
    s.overlap_p2p_comm = true;
    s.batch_p2p_comm = false;
    sc::workload w = llama3_70b_sft;
    w.micro_batches = 32 / s.data_parallel_size;
    const double published_us = 4096 / tokens_per_gpu * 1e6;  // 32 x 4,096 tokens on 32 GPUs
    record(name, "step / published - 1", step_us(s, w, ov::sim::analytic_cost_model(m)) / published_us - 1, published,
           -0.15, 0.15, pinned);
  };
  sft("llama3_70b_sft_mxfp8_gb200_32_gpus_step", 1, 8, 10, 3593, "3,593 tokens/s/GPU (1.140 s per step)",
      ov::sim::gb200_nvl72(), false);
  sft("llama3_70b_sft_fp8_h100_32_gpus_step", 4, 4, 5, 1638, "1,638 tokens/s/GPU (2.501 s per step)",
      ov::sim::h100_node(), true);
  std::printf("]}\n");
  return pinned_missed ? 1 : 0;
}
