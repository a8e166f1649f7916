// libFuzzer target: any bytes decode into a settings value (every field, enums and bit sets
// included, out-of-range values too); validate() must neither crash nor hit undefined behaviour
// (ASan + UBSan), and its report must be consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

#include <overlap/overlap.hpp>

namespace {

class byte_reader {
 public:
  byte_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  template <class T>
  T next() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    const std::size_t n = sizeof(T) < size_ ? sizeof(T) : size_;
    std::memcpy(&v, data_, n);
    data_ += n;
    size_ -= n;
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
E any_enum(byte_reader& in) {
  return static_cast<E>(in.next<std::uint8_t>() % 12);  // beyond the enumerators at times
}

overlap::ub::slot any_slot(byte_reader& in) {
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

overlap::settings decode(byte_reader& in) {
  overlap::settings s;
  s.tensor_model_parallel_size = in.integer();
  s.pipeline_model_parallel_size = in.integer();
  in.maybe(s.virtual_pipeline_model_parallel_size, in.integer());
  s.context_parallel_size = in.integer();
  s.data_parallel_size = in.integer();
  s.expert_model_parallel_size = in.integer();
  in.maybe(s.expert_tensor_parallel_size, in.integer());
  for (bool* b : {&s.sequence_parallel, &s.distributed_optimizer, &s.overlap_p2p_comm_warmup_flush,
                  &s.use_dist_ckpt, &s.moe_shared_expert_overlap,
                  &s.ep_overlap_early_attn_memory_release,
                  &s.overlap_dispatch_backward_with_experts_wgrad,
                  &s.moe_pad_expert_input_to_capacity, &s.gradient_accumulation_fusion,
                  &s.add_bias_linear, &s.add_qkv_bias, &s.fp8, &s.fp8_param_gather,
                  &s.grad_reduce_in_fp32})
    *b = in.flag();
  for (std::optional<bool>* b :
       {&s.tp_comm_overlap, &s.overlap_p2p_comm, &s.batch_p2p_comm, &s.overlap_grad_reduce,
        &s.overlap_param_gather, &s.overlap_param_gather_with_optimizer_step,
        &s.align_param_gather, &s.defer_embedding_wgrad_compute,
        &s.overlap_moe_expert_parallel_comm, &s.delay_wgrad_compute})
    in.maybe(*b, in.flag());
  for (std::optional<int>* v :
       {&s.num_moe_experts, &s.moe_shared_expert_intermediate_size, &s.mtp_num_layers,
        &s.recompute_num_layers, &s.num_buckets, &s.wgrad_deferral_limit,
        &s.cuda_device_max_connections, &s.layernorm_sm_margin})
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
    static constexpr const char* names[] = {
        "", "userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192", "userbuffers_bf16_h100_h6144_tp2",
        "userbuffers_tp", "_tp99999999999_cp"};
    c.preset_name = names[in.next<std::uint8_t>() % 5];
    s.tp_comm_overlap_cfg = c;
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  byte_reader in(data, size);
  const overlap::settings s = decode(in);
  const overlap::report r = overlap::validate(s);
  // The report is consistent: resolved exactly when valid, only known ids, OPT-3 alone.
  if (r.ok() != r.resolved.has_value()) std::abort();
  for (const overlap::diagnostic& d : r)
    if (overlap::rules::find(d.id).id != d.id) std::abort();
  if (r.violates("OPT-3") && r.count() != 1) std::abort();
  return 0;
}
