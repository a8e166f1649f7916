// Simulator speed: simulated ops per second for growing layers x micro-batches x ranks (the DP
// family's steps, dp 8 to 64). Prints {"records":[...]} on stdout. Each DP record simulates its
// step in three ways: "ops_per_second" as one call does, its memory fresh from the allocator;
// "reused_ops_per_second" again in the workspace that call filled (sim::workspace, as a sweep
// reuses one); "summary_ops_per_second" in it without the per-op intervals (options::intervals,
// as the planner's tuner runs). Each is the median of `rounds` rounds (one call of each way a
// round): a single call of a small step takes a millisecond or less, which this VM's noise
// swamps. The "best_" rates are the fastest round of each way: other tenants of a shared machine
// only ever slow a run down, so the fastest is the code's own cost with the least of theirs in it
// (the medians moved by up to 40 % between runs of one binary here, the best rates less).
// "first_ops_per_second" is the first round's fresh call alone: the code and data caches cold,
// and memory the process never touched (on this VM the host backs such memory on first touch,
// ~1.6 ns a byte against ~0.1 with huge pages the kernel already had: see sim/engine/large_array.hpp).
//
// With --scale, also steps at the scale people train at, generated and simulated once per class
// of symmetric ranks (schedule/classes.hpp): a Llama-70B-like tp8 pp8 vpp2 dp16 (1,024 GPUs) and
// tp8 pp16 dp64 (8,192 GPUs), a DeepSeek-V3-like MoE on 2,048 GPUs (pp16 dp128 ep64); the runs of
// the scale issue, built from settings as the recipes set them: Llama-3.1-405B on 256 GB200s (tp4
// pp16 vpp8, 384 micro-batches, TP overlap) and on 16,384 H100s (tp8 pp16 vpp4, 16 micro-batches),
// and DeepSeek-V3's H100 recipe (tp2 pp8 vpp4 ep64) on 1,024, 16,384 and 131,072 H100s at 64
// micro-batches (growth with ranks) and on 16,384 at 16 and 32 (growth with micro-batches). With
// --scale-full, also in full (every rank) for comparison the steps whose programs fit in memory
// here: the 2,048-GPU MoE and a 128-GPU dense tp8 pp8 vpp2 dp2 (the 1,024-GPU dense step has
// ~36 M ops: ~15 GiB of programs). Each scale record also times the verifier on the same programs
// (once per class, or in full), after the "seconds" of generation and simulation it does not count
// in. Each scale record runs in a child process forked before anything else is allocated, so its
// peak resident memory ("peak_rss_mib", the verifier's included) is its own; "bytes_per_op" is
// that memory over the ops generated (the binary's own ~20 MiB in it). Not run by ctest.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/plan/plan.hpp>
#include <overlap/schedule/classes.hpp>
#include <overlap/schedule/step.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/sim/machine/blackwell.hpp>
#include <overlap/sim/simulate.hpp>
#include <overlap/verify/verify.hpp>

namespace ov = overlap;
namespace sc = overlap::schedule;

namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct scale_case {
  std::string name;
  ov::settings s;
  sc::workload w;
};

/// A dense Llama of `layers` x `hidden` (`ffn` wide, `heads` heads in 8 query groups) with the
/// recipes' overlaps on: TP overlap with sequence parallelism, the distributed optimizer's
/// reduce-scatter and all-gather overlapped.
scale_case dense(int layers, int hidden, int ffn, int heads, int tp, int pp, int vpp, int dp, int micro_batches) {
  scale_case c{"", {}, {}};
  c.s.tensor_model_parallel_size = tp;
  c.s.pipeline_model_parallel_size = pp;
  if (vpp > 1) c.s.virtual_pipeline_model_parallel_size = vpp;
  c.s.data_parallel_size = dp;
  c.s.precision = ov::dtype::bf16;
  c.s.sequence_parallel = true;
  c.s.tp_comm_overlap = true;
  c.s.distributed_optimizer = true;
  c.s.overlap_grad_reduce = true;
  c.s.overlap_param_gather = true;
  c.w = {.num_layers = layers,
         .micro_batches = micro_batches,
         .seq_length = 4096,
         .hidden_size = hidden,
         .ffn_hidden_size = ffn,
         .num_attention_heads = heads,
         .num_query_groups = 8,
         .vocab_size = 128256};
  return c;
}

scale_case llama_70b(int tp, int pp, int vpp, int dp, int micro_batches) {
  return dense(80, 8192, 28672, 64, tp, pp, vpp, dp, micro_batches);
}

/// Llama-3.1-405B as NVIDIA's recipes split it: 126 layers with the embedding and the loss
/// counted as layers (128 over pp x vpp chunks), sequences of 8,192.
scale_case llama_405b(int tp, int pp, int vpp, int dp, int micro_batches) {
  scale_case c = dense(126, 16384, 53248, 128, tp, pp, vpp, dp, micro_batches);
  c.w.seq_length = 8192;
  c.w.account_for_embedding_in_pipeline_split = true;
  c.w.account_for_loss_in_pipeline_split = true;
  return c;
}

/// 61 layers of DeepSeek-V3 rounded to 64 (a multiple of pp 16), all MoE: 256 experts of 2,048,
/// top-8, one shared expert; attention as GQA of its width.
scale_case deepseek_v3() {
  scale_case c{"deepseek_v3_like pp16 dp128 ep64", {}, {}};
  c.s.pipeline_model_parallel_size = 16;
  c.s.data_parallel_size = 128;
  c.s.expert_model_parallel_size = 64;
  c.s.expert_tensor_parallel_size = 1;
  c.s.num_moe_experts = 256;
  c.s.moe_shared_expert_intermediate_size = 2048;
  c.s.moe_token_dispatcher_type = ov::dispatcher::alltoall;
  c.s.precision = ov::dtype::bf16;
  c.s.distributed_optimizer = true;
  c.s.overlap_grad_reduce = true;
  c.s.overlap_param_gather = true;
  c.w = {.num_layers = 64,
         .micro_batches = 16,
         .seq_length = 4096,
         .hidden_size = 7168,
         .ffn_hidden_size = 18432,
         .num_attention_heads = 128,
         .vocab_size = 129280,
         .moe_router_topk = 8,
         .moe_ffn_hidden_size = 2048};
  return c;
}

/// DeepSeek-V3 as its H100 recipe runs it (tp2 pp8 vpp4 ep64, its layout of 61 layers and the
/// MTP layer over 32 chunks, MLA, the first three layers dense) on `dp` x 16 GPUs.
scale_case deepseek_v3_h100(int dp, int micro_batches) {
  scale_case c = deepseek_v3();
  c.s.tensor_model_parallel_size = 2;
  c.s.sequence_parallel = true;
  c.s.pipeline_model_parallel_size = 8;
  c.s.virtual_pipeline_model_parallel_size = 4;
  c.s.data_parallel_size = dp;
  c.s.mtp_num_layers = 1;
  c.w.num_layers = 61;
  c.w.micro_batches = micro_batches;
  c.w.multi_latent_attention = true;
  c.w.q_lora_rank = 1536;
  c.w.pipeline_layout = "Et|(tt|)*30mL";
  c.w.moe_layer_pattern.assign(61, 1);
  std::fill_n(c.w.moe_layer_pattern.begin(), 3, 0);
  return c;
}

/// One scale record as JSON, with the peak resident memory of the process it runs in (in_child's).
std::string run_scale(const scale_case& c, bool full, const ov::sim::cost_model& cost) {
  const ov::resolved_settings r = ov::derive(c.s);
  const auto start = std::chrono::steady_clock::now();
  sc::rank_classes classes;
  std::vector<sc::program> step;
  if (full) {
    step = sc::compose_step(c.s, r, c.w);
    classes = sc::rank_classes::each_alone(static_cast<int>(step.size()));
  } else {
    classes = sc::symmetric_classes(c.s, r, c.w, cost.machine().gpus_per_node);
  }
  const double classes_s = since(start);
  if (!full) step = sc::compose_step(c.s, r, c.w, classes);
  const double generate_s = since(start) - classes_s;
  const std::vector<int> sizes = classes.sizes();
  std::size_t ops = 0, represented = 0;
  for (const auto& p : step) {
    ops += p.ops.size();
    represented += p.ops.size() * static_cast<std::size_t>(sizes[static_cast<std::size_t>(p.rank)]);
  }
  const auto sim_start = std::chrono::steady_clock::now();
  const ov::sim::result res = full ? ov::sim::simulate(step, cost, ov::plan::options_for(r))
                                   : ov::sim::simulate(step, cost, classes, ov::plan::options_for(r));
  const double simulate_s = since(sim_start), wall = since(start);
  // Memory analysis of the same step: over the simulated timeline and over issue order.
  // Over the timeline is what `overlap-plan simulate` adds; over issue order what `tune` adds.
  const auto memory_start = std::chrono::steady_clock::now();
  std::int64_t peak_in_time = 0, peak_in_order = 0;
  for (const ov::sim::memory_peak& m : ov::sim::peaks_in_time(step, res))
    peak_in_time = std::max(peak_in_time, m.bytes);
  const double memory_s = since(memory_start);
  const auto order_start = std::chrono::steady_clock::now();
  for (const sc::program& p : step) peak_in_order = std::max(peak_in_order, ov::sim::peak_in_issue_order(p).bytes);
  const double order_s = since(order_start);
  // The verifier on the same programs: once per class (the full step's findings), or in full.
  const auto verify_start = std::chrono::steady_clock::now();
  const std::size_t findings = full ? ov::verify::verify(step).size() : ov::verify::verify(step, classes).size();
  const double verify_s = since(verify_start);
  const auto exposed = [&](sc::family f) { return res.exposed_comm_us[static_cast<std::size_t>(f)]; };
  // The process's peak resident memory: it runs in a child forked before anything was allocated
  // (in_child), so this is the record's own. Per op of the programs generated.
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double peak_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux: KiB
  char text[1280];
  std::snprintf(text, sizeof text,
                "{\"scale\":\"%s\",\"mode\":\"%s\",\"gpus\":%d,\"simulated_ranks\":%zu,\"ops\":%zu,\"step_ops\":%zu,"
                "\"classes_seconds\":%.3f,\"generate_seconds\":%.3f,\"simulate_seconds\":%.3f,\"seconds\":%.3f,"
                "\"verify_seconds\":%.3f,\"findings\":%zu,\"memory_seconds\":%.3f,\"memory_share\":%.3f,"
                "\"memory_issue_order_seconds\":%.3f,"
                "\"peak_memory_gb\":%.2f,\"peak_memory_issue_order_gb\":%.2f,"
                "\"ops_per_second\":%.0f,\"step_ops_per_second\":%.0f,\"step_time_us\":%.1f,"
                "\"exposed_us\":{\"tp\":%.1f,\"dp\":%.1f,\"pp\":%.1f,\"ep\":%.1f},\"deadlock\":%s,"
                "\"micro_batches\":%d,\"peak_rss_mib\":%.1f,\"bytes_per_op\":%.0f}",
                c.name.c_str(), full ? "full" : "classes", classes.world(), step.size(), ops, represented,
                full ? 0.0 : classes_s, full ? classes_s : generate_s, simulate_s, wall, verify_s, findings, memory_s,
                memory_s / simulate_s, order_s, static_cast<double>(peak_in_time) / 1e9,
                static_cast<double>(peak_in_order) / 1e9, ops / simulate_s, represented / wall, res.step_time_us,
                exposed(sc::family::tp), exposed(sc::family::dp), exposed(sc::family::pp), exposed(sc::family::ep),
                res.deadlock ? "true" : "false", c.w.micro_batches, peak_rss_bytes / (1 << 20),
                peak_rss_bytes / static_cast<double>(ops));
  return text;
}

/// Runs one scale record in a child process, so that its peak resident memory is its own.
std::string in_child(const scale_case& c, bool full, const ov::sim::cost_model& cost) {
  int fd[2];
  if (pipe(fd) != 0) return "{\"scale\":\"pipe failed\"}";
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    close(fd[0]);
    std::string text;
    try {
      text = run_scale(c, full, cost);
    } catch (const std::exception& e) {
      text = std::string("{\"scale\":\"") + c.name + "\",\"error\":\"" + e.what() + "\"}";
    }
    const ssize_t written = write(fd[1], text.data(), text.size());
    _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(fd[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fd[0], buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (text.empty()) text = "{\"scale\":\"" + c.name + "\",\"error\":\"the child failed\"}";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  bool scale = false, full = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--scale") == 0)
      scale = true;
    else if (std::strcmp(argv[i], "--scale-full") == 0)
      scale = full = true;
    else {
      std::fprintf(stderr, "usage: %s [--scale | --scale-full]\n", argv[0]);
      return 2;
    }
  }
  const ov::sim::analytic_cost_model h100(ov::sim::h100_node());
  std::string scale_records;
  if (scale) {
    const ov::sim::analytic_cost_model gb200(ov::sim::gb200_nvl72());
    const auto add = [&](scale_case c, std::string name, const ov::sim::cost_model& cost, bool in_full = false) {
      c.name = std::move(name);
      scale_records += "," + in_child(c, in_full, cost);
    };
    add(llama_70b(8, 8, 2, 16, 16), "llama_70b_like tp8 pp8 vpp2 dp16", h100);
    add(llama_70b(8, 16, 1, 64, 32), "llama_70b_like tp8 pp16 dp64", h100);
    add(deepseek_v3(), "deepseek_v3_like pp16 dp128 ep64", h100);
    // The published runs of the scale issue: Llama-3.1-405B as NVIDIA's recipe runs it on 256
    // GB200s (GBS 1,536) and on 16,384 H100s (GBS 2,048); DeepSeek-V3's H100 recipe on 16,384
    // and 131,072 H100s (GBS 65,536 and 262,144).
    add(llama_405b(4, 16, 8, 4, 384), "llama_405b_like tp4 pp16 vpp8 dp4 gb200", gb200);
    add(llama_405b(8, 16, 4, 128, 16), "llama_405b_like tp8 pp16 vpp4 dp128", h100);
    // Growth with ranks at 64 micro-batches, then with micro-batches at 16,384 ranks.
    for (const int dp : {64, 1024, 8192})
      add(deepseek_v3_h100(dp, 64), "deepseek_v3_h100 tp2 pp8 vpp4 ep64 dp" + std::to_string(dp), h100);
    for (const int micro_batches : {16, 32})
      add(deepseek_v3_h100(1024, micro_batches), "deepseek_v3_h100 tp2 pp8 vpp4 ep64 dp1024", h100);
    if (full) {
      add(deepseek_v3(), "deepseek_v3_like pp16 dp128 ep64", h100, true);
      add(llama_70b(8, 8, 2, 2, 16), "llama_70b_like tp8 pp8 vpp2 dp2", h100, true);
      add(llama_70b(8, 8, 2, 2, 16), "llama_70b_like tp8 pp8 vpp2 dp2", h100);
    }
  }
  std::printf("{\"records\":[");
  bool first = true;
  for (const int scale_factor : {1, 2, 4, 8}) {
    sc::workload w{.num_layers = 8 * scale_factor, .micro_batches = 4 * scale_factor};
    ov::settings s;
    s.data_parallel_size = 8 * scale_factor;
    s.overlap_grad_reduce = true;
    const auto step = sc::data_parallel_step(s, ov::derive(s), w);
    std::size_t ops = 0;
    for (const auto& p : step) ops += p.ops.size();
    // Each round: once as a single call does (its memory fresh), then as a sweep does: again in
    // the workspace the first call filled, with and without the per-op intervals.
    const auto timed = [&](const ov::sim::options& opt, bool& deadlock) {
      const auto start = std::chrono::steady_clock::now();
      deadlock = ov::sim::simulate(step, h100, opt).deadlock || deadlock;
      return since(start);
    };
    constexpr int rounds = 5;
    bool deadlock = false;
    std::vector<double> fresh, reused, summary;
    for (int round = 0; round < rounds; ++round) {
      ov::sim::workspace space;
      fresh.push_back(timed({.reuse = &space}, deadlock));
      reused.push_back(timed({.reuse = &space}, deadlock));
      summary.push_back(timed({.reuse = &space, .intervals = false}, deadlock));
    }
    const double first_call = fresh.front();
    const auto median = [](std::vector<double> v) {
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    const auto best = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    const double seconds = median(fresh);
    std::printf(
        "%s{\"layers\":%d,\"micro_batches\":%d,\"ranks\":%zu,\"ops\":%zu,\"rounds\":%d,\"seconds\":%.6f,"
        "\"ops_per_second\":%.0f,\"reused_ops_per_second\":%.0f,\"summary_ops_per_second\":%.0f,"
        "\"best_ops_per_second\":%.0f,\"best_reused_ops_per_second\":%.0f,\"best_summary_ops_per_second\":%.0f,"
        "\"first_ops_per_second\":%.0f,\"deadlock\":%s}",
        first ? "" : ",", w.num_layers, w.micro_batches, step.size(), ops, rounds, seconds, ops / seconds,
        ops / median(reused), ops / median(summary), ops / best(fresh), ops / best(reused), ops / best(summary),
        ops / first_call, deadlock ? "true" : "false");
    first = false;
  }
  std::printf("%s]}\n", scale_records.c_str());
}
