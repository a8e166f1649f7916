#pragma once
/// @file
/// Human-readable output of resolved settings: one `name = value` line per upstream field, and
/// the environment as shell `export` lines.

#include <optional>
#include <ostream>
#include <string_view>

#include <overlap/settings/resolved.hpp>

namespace overlap {

namespace detail {
inline void write_field(std::ostream& os, std::string_view name, bool v) {
  os << name << " = " << (v ? "true" : "false") << '\n';
}
template <class T>
void write_field(std::ostream& os, std::string_view name, const std::optional<T>& v) {
  os << name << " = ";
  if (v) os << *v;
  else os << "unset";
  os << '\n';
}
inline void write_slot(std::ostream& os, std::string_view name, const ub::slot& x) {
  const auto flags = os.flags();
  os << std::boolalpha << "tp_comm_overlap_cfg." << name << " = " << to_string(x.method);
  if (x.method != ub::method::none) {
    os << "(num_sm=" << x.num_sm << ", cga_size=" << x.cga_size;
    if (x.method == ub::method::pipeline) os << ", num_splits=" << x.num_splits;
    os << ", set_sm_margin=" << x.set_sm_margin << ", aggregate=" << x.aggregate
       << ", fp8_buf=" << x.fp8_buf << ", atomic_gemm=" << x.atomic_gemm << ')';
  }
  os << '\n';
  os.flags(flags);
}
}  // namespace detail

/// Every resolved upstream field, one per line.
inline void write_resolved(std::ostream& os, const resolved_settings& r) {
  detail::write_field(os, "tp_comm_overlap", r.tp_comm_overlap);
  detail::write_field(os, "sequence_parallel", r.sequence_parallel);
  detail::write_field(os, "overlap_p2p_comm", r.overlap_p2p_comm);
  detail::write_field(os, "batch_p2p_comm", r.batch_p2p_comm);
  detail::write_field(os, "overlap_grad_reduce", r.overlap_grad_reduce);
  detail::write_field(os, "overlap_param_gather", r.overlap_param_gather);
  detail::write_field(os, "overlap_param_gather_with_optimizer_step",
                      r.overlap_param_gather_with_optimizer_step);
  detail::write_field(os, "align_param_gather", r.align_param_gather);
  detail::write_field(os, "bucket_size", r.bucket_size);
  detail::write_field(os, "num_buckets", r.num_buckets);
  detail::write_field(os, "defer_embedding_wgrad_compute", r.defer_embedding_wgrad_compute);
  os << "wgrad_deferral_limit = " << r.wgrad_deferral_limit << '\n';
  detail::write_field(os, "overlap_moe_expert_parallel_comm", r.overlap_moe_expert_parallel_comm);
  detail::write_field(os, "delay_wgrad_compute", r.delay_wgrad_compute);
  detail::write_field(os, "moe_shared_expert_overlap", r.moe_shared_expert_overlap);
  if (r.tp_comm_overlap) {
    for (const ub::slot_id id : ub::all_slots)
      detail::write_slot(os, to_string(id), r.tp_comm_overlap_cfg[id]);
  }
}

/// The environment the run needs, as `export NAME=value` lines (unset variables are left alone).
inline void write_environment(std::ostream& os, const resolved_settings& r) {
  const auto line = [&](std::string_view name, const std::optional<int>& v) {
    if (v) os << "export " << name << '=' << *v << '\n';
  };
  line("CUDA_DEVICE_MAX_CONNECTIONS", r.cuda_device_max_connections);
  line("NVTE_FWD_LAYERNORM_SM_MARGIN", r.nvte_fwd_layernorm_sm_margin);
  line("NVTE_BWD_LAYERNORM_SM_MARGIN", r.nvte_bwd_layernorm_sm_margin);
}

}  // namespace overlap
