#pragma once
// What the fuzz targets decode bytes into: settings (every field, enums and bit sets included,
// out-of-range values too), workloads, steps of small programs and their costs. A short input
// reads as zeros past its end, so every input decodes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <overlap/overlap.hpp>
#include <overlap/program/program.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/schedule/workload.hpp>

namespace fuzz {

class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  template <class T>
  T next() {
    static_assert(std::is_trivially_copyable_v<T>);
    // Byte by byte into a zeroed buffer, then one fixed-size copy: g++ 12 -O2 miscompiled the
    // variable-length memcpy into the value here (past the input's end it returned bytes that are
    // not zeros; -fno-strict-aliasing or -O1 hid it), so one input decoded differently per build.
    unsigned char raw[sizeof(T)] = {};
    const std::size_t n = sizeof(T) < size_ ? sizeof(T) : size_;
    for (std::size_t i = 0; i < n; ++i) raw[i] = data_[i];
    data_ += n;
    size_ -= n;
    T v;
    std::memcpy(&v, raw, sizeof(T));
    return v;
  }
  bool flag() { return (next<std::uint8_t>() & 1u) != 0; }
  /// Small values most of the time (so rules see realistic layouts), anything sometimes.
  int integer() {
    const auto mode = next<std::uint8_t>();
    if (mode % 4 != 0) return static_cast<int>(mode % 17) - 1;
    return next<std::int32_t>();
  }
  template <class T>
  void maybe(std::optional<T>& field, T value) {
    if (flag()) field = value;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

template <class E>
inline E any_enum(byte_reader& in) {
  return static_cast<E>(in.next<std::uint8_t>() % 12);  // beyond the enumerators at times
}

inline overlap::ub::slot any_slot(byte_reader& in) {
  overlap::ub::slot x;
  x.method = any_enum<overlap::ub::method>(in);
  x.num_sm = in.integer();
  x.cga_size = in.integer();
  x.num_splits = in.integer();
  x.set_sm_margin = in.flag();
  x.aggregate = in.flag();
  x.fp8_buf = in.flag();
  x.atomic_gemm = in.flag();
  return x;
}

inline overlap::settings decode_settings(byte_reader& in) {
  overlap::settings s;
  s.tensor_model_parallel_size = in.integer();
  s.pipeline_model_parallel_size = in.integer();
  in.maybe(s.virtual_pipeline_model_parallel_size, in.integer());
  s.context_parallel_size = in.integer();
  s.data_parallel_size = in.integer();
  s.expert_model_parallel_size = in.integer();
  in.maybe(s.expert_tensor_parallel_size, in.integer());
  for (bool* b : {&s.sequence_parallel, &s.distributed_optimizer, &s.overlap_p2p_comm_warmup_flush, &s.use_dist_ckpt,
                  &s.moe_shared_expert_overlap, &s.ep_overlap_early_attn_memory_release,
                  &s.overlap_dispatch_backward_with_experts_wgrad, &s.moe_pad_expert_input_to_capacity,
                  &s.gradient_accumulation_fusion, &s.add_bias_linear, &s.add_qkv_bias, &s.fp8, &s.fp8_param_gather,
                  &s.grad_reduce_in_fp32})
    *b = in.flag();
  for (std::optional<bool>* b :
       {&s.tp_comm_overlap, &s.overlap_p2p_comm, &s.batch_p2p_comm, &s.overlap_grad_reduce, &s.overlap_param_gather,
        &s.overlap_param_gather_with_optimizer_step, &s.align_param_gather, &s.defer_embedding_wgrad_compute,
        &s.overlap_moe_expert_parallel_comm, &s.delay_wgrad_compute})
    in.maybe(*b, in.flag());
  for (std::optional<int>* v :
       {&s.num_moe_experts, &s.moe_shared_expert_intermediate_size, &s.mtp_num_layers, &s.recompute_num_layers,
        &s.num_buckets, &s.wgrad_deferral_limit, &s.cuda_device_max_connections, &s.layernorm_sm_margin})
    in.maybe(*v, in.integer());
  in.maybe(s.bucket_size, in.next<std::int64_t>());
  s.moe_token_dispatcher_type = any_enum<overlap::dispatcher>(in);
  in.maybe(s.moe_flex_dispatcher_backend, any_enum<overlap::flex_backend>(in));
  s.precision = any_enum<overlap::dtype>(in);
  in.maybe(s.recompute_granularity, any_enum<overlap::granularity>(in));
  in.maybe(s.recompute_method, any_enum<overlap::recompute>(in));
  s.cuda_graph_impl = any_enum<overlap::graph_impl>(in);
  in.maybe(s.gpu, any_enum<overlap::gpu_model>(in));
  s.tp_comm_bootstrap_backend = any_enum<overlap::bootstrap>(in);
  s.recompute_modules.bits = in.next<std::uint32_t>();
  s.cuda_graph_modules.bits = in.next<std::uint32_t>();
  in.maybe(s.te_version, overlap::version{in.integer(), in.integer(), in.integer()});
  if (in.flag()) {
    overlap::ub::user_config c;
    for (const overlap::ub::slot_id id : overlap::ub::all_slots)
      if (in.flag()) c.slots[id] = any_slot(in);
    static constexpr const char* names[] = {"", "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192",
                                            "userbuffers_bf16_h100_h6144_tp2", "userbuffers_tp", "_tp99999999999_cp"};
    c.preset_name = names[in.next<std::uint8_t>() % 5];
    s.tp_comm_overlap_cfg = c;
  }
  return s;
}

/// Sizes mostly small and positive, sometimes zero, negative or anything.
inline overlap::schedule::workload decode_workload(byte_reader& in) {
  overlap::schedule::workload w;
  for (int* v : {&w.num_layers, &w.micro_batches, &w.seq_length, &w.micro_batch_size, &w.hidden_size,
                 &w.ffn_hidden_size, &w.num_attention_heads, &w.num_query_groups, &w.kv_channels, &w.vocab_size,
                 &w.moe_router_topk, &w.moe_ffn_hidden_size}) {
    const auto mode = in.next<std::uint8_t>();
    *v = mode % 8 == 0 ? in.next<std::int32_t>() : mode % 8 == 1 ? 0 : (mode >> 3) * 8 % 256;
  }
  w.share_embeddings_and_output_weights = in.flag();
  // Last, so that the corpus made before MLA keeps decoding as it did.
  w.multi_latent_attention = in.flag();
  if (w.multi_latent_attention)
    for (int* v : {&w.q_lora_rank, &w.kv_lora_rank, &w.qk_head_dim, &w.qk_pos_emb_head_dim, &w.v_head_dim}) {
      const auto mode = in.next<std::uint8_t>();
      *v = mode % 8 == 0 ? in.next<std::int32_t>() : mode % 8 == 1 ? 0 : (mode >> 3) * 8 % 256;
    }
  return w;
}

/// A step of 1..4 small programs: indices mostly in range, sometimes not; sizes, GEMM shapes and
/// key coordinates mostly small, sometimes negative, huge or not finite.
inline std::vector<overlap::schedule::program> decode_step(byte_reader& in) {
  namespace sc = overlap::schedule;
  std::vector<sc::program> step(1 + in.next<std::uint8_t>() % 4);
  static constexpr const char* names[] = {"tp", "dp", "ep"};
  const auto small = [&](int n) { return static_cast<int>(in.next<std::uint8_t>() % (n + 2)) - 1; };
  for (std::size_t r = 0; r < step.size(); ++r) {
    sc::program& p = step[r];
    p.rank = in.next<std::uint8_t>() % 16 == 0 ? small(4) : static_cast<int>(r);
    p.streams.resize(in.next<std::uint8_t>() % 4);
    for (auto& s : p.streams) s = {static_cast<sc::stream_role>(in.next<std::uint8_t>() % 6), small(2)};
    p.comms.resize(in.next<std::uint8_t>() % 3);
    for (std::size_t c = 0; c < p.comms.size(); ++c) {
      p.comms[c].name = names[(c + in.next<std::uint8_t>() % 2) % 3];
      const auto members = in.next<std::uint8_t>();
      if (members & 0x80) {  // anything
        p.comms[c].ranks.resize(members % 5);
        for (int& m : p.comms[c].ranks) m = small(4);
      } else {
        for (std::size_t k = 0; k < step.size(); ++k) p.comms[c].ranks.push_back(static_cast<int>(k));
      }
    }
    p.num_events = small(3);
    p.buffers.resize(in.next<std::uint8_t>() % 4);
    // Buffer kinds (one past the last), and sizes: mostly kilobytes, sometimes any 64-bit value,
    // sometimes more of them than buffers.
    for (sc::buffer& b : p.buffers) b.kind = static_cast<sc::buffer_kind>(in.next<std::uint8_t>() % 15);
    p.buffer_bytes.resize(in.next<std::uint8_t>() % 6);
    for (std::int64_t& b : p.buffer_bytes) {
      const auto v = in.next<std::uint8_t>();
      b = v % 16 == 0 ? in.next<std::int64_t>() : v * std::int64_t{1000};
    }
    const int ops = in.next<std::uint8_t>() % 12;
    for (int i = 0; i < ops; ++i) {
      sc::op o;
      const auto kind = in.next<std::uint8_t>();
      o.kind = static_cast<sc::op_kind>(kind % 64 == 63 ? kind : kind % 7);
      o.stream = small(static_cast<int>(p.streams.size()));
      o.key.type = static_cast<sc::op_type>(
          in.next<std::uint8_t>() % 4 == 0 ? in.next<std::uint8_t>() % (sc::op_type_count + 2) : 0);
      o.key.at.layer = small(3);
      o.key.at.micro_batch = small(3);
      o.coll = static_cast<sc::collective>(in.next<std::uint8_t>() % 5);
      o.comm = small(static_cast<int>(p.comms.size()));
      o.peer = small(3);
      o.seq = small(4);
      const auto size = in.next<std::uint8_t>();
      o.bytes = size % 16 == 0 ? in.next<std::int64_t>() : size * 1024;
      const auto work = in.next<std::uint8_t>();
      static constexpr double odd[] = {std::numeric_limits<double>::quiet_NaN(),
                                       std::numeric_limits<double>::infinity(), -1e15, 1e300, 0};
      o.flops = work % 8 == 0 ? odd[(work >> 3) % 5] : work * 1e9;
      o.memory_bytes = work % 16 == 1 ? in.next<std::int64_t>() : work * 4096;
      o.event = small(std::max(0, p.num_events));
      o.sms = small(8);
      o.group = in.next<std::uint8_t>() % 4 == 0 ? small(2) : -1;
      const auto buffers = in.next<std::uint8_t>();
      if (buffers & 1) o.reads.push_back(small(static_cast<int>(p.buffers.size())));
      if (buffers & 2) o.writes.push_back(small(static_cast<int>(p.buffers.size())));
      // Key coordinates and slots mostly as generated, sometimes out of range; GEMM shapes mostly
      // none or realistic, sometimes negative, beyond any GPU, mixed with zeros or with no group.
      const auto key = in.next<std::uint8_t>();
      if (key % 8 == 0) o.key.at.layer = key % 16 == 0 ? std::numeric_limits<int>::min() : -7;
      if (key % 8 == 1) o.key.at.chunk = small(2), o.key.at.bucket = small(2), o.key.at.split = small(4);
      if (key % 8 == 2) o.key.slot = static_cast<sc::op_type>(in.next<std::uint8_t>());
      if (key % 8 == 3) o.key.slot = sc::op_type::fc1_fprop;
      if (key % 8 == 4) o.format = sc::gemm_format::fp8;
      if (key % 8 == 5) o.format = sc::gemm_format::fp4;                       // refused on a machine without fp4
      if (key % 8 == 6) o.format = static_cast<sc::gemm_format>(3 + key / 8);  // no such format
      const auto shape = in.next<std::uint8_t>();
      static constexpr std::int64_t sizes[] = {0,
                                               1,
                                               128,
                                               4096,
                                               -128,
                                               std::int64_t{1} << 31,
                                               std::int64_t{1} << 40,
                                               std::numeric_limits<std::int64_t>::max()};
      if (shape % 4 == 1) o.gemm = {4096, 4096, 1024 << (shape % 5), 1};
      if (shape % 4 == 2)
        o.gemm = {sizes[(shape >> 2) % 8], sizes[(shape >> 3) % 8], sizes[(shape >> 4) % 8], sizes[(shape >> 5) % 8]};
      p.ops.push_back(o);
    }
  }
  return step;
}

/// A class map for a decoded step: a world of up to 6 ranks, each mostly its own representative
/// or another small rank, sometimes one outside the world.
inline overlap::schedule::rank_classes decode_classes(byte_reader& in) {
  overlap::schedule::rank_classes c;
  c.representative.resize(1 + in.next<std::uint8_t>() % 6);
  for (std::size_t r = 0; r < c.representative.size(); ++r) {
    const auto pick = in.next<std::uint8_t>();
    c.representative[r] = pick % 2 == 0 ? static_cast<int>(r) : static_cast<int>(pick % 9) - 1;
  }
  return c;
}

}  // namespace fuzz
