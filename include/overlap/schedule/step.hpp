#pragma once
/// @file
/// The composed step: the programs of every rank of a tp x pp x dp layout (expert parallelism
/// inside the data-parallel dimension), with every enabled family in one program. The pipeline
/// order (pipeline_parallel.hpp) decides which micro-batch and chunk runs when; each layer is
/// tensor-parallel GEMM slots (tensor_parallel.hpp) or one op without TP; MoE layers dispatch and
/// combine over the ep group (expert_parallel.hpp), with EP overlap pairing a forward with the
/// next backward layer by layer; the data-parallel buckets (data_parallel.hpp) reduce gradients
/// during the last micro-batch's backward and gather parameters ahead of the first forward.
///
/// Ranks follow Megatron's order: tp fastest, then the data-parallel dimension, then pp. Experts
/// tile the tp x dp ranks of a stage in the same order (expert_tensor_parallel_size 1; etp > 1
/// with ep > 1 is refused): an ep group is `ep` consecutive ranks, the expert-data-parallel group
/// the ranks at the same place in their ep groups. Every layer of a model with `experts` is a MoE
/// layer; TP assumes sequence parallelism (TP-2). Context parallelism is not modelled.
///
/// `schedule<Cfg>` fixes at compile time which families a config type composes; the
/// single-family steps below are the same generator with the other families left out, which is
/// what the planner compares family by family.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <overlap/schedule/data_parallel.hpp>
#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/expert_parallel.hpp>
#include <overlap/schedule/pipeline_parallel.hpp>
#include <overlap/schedule/program.hpp>
#include <overlap/schedule/tensor_parallel.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

/// Which families a step composes; a family left out runs as if its size were 1.
struct family_set {
  bool tp = true, dp = true, pp = true, ep = true;
};

namespace detail {

/// Tensor-parallel attention for the EP builder: the qkv, core and proj slots.
class tp_attention {
 public:
  tp_attention(tp_builder& b, const ub::resolved_config& slots) : b_(b), slots_(slots) {}
  void forward(const std::string& at) { b_.attention_forward(slots_, at); }
  void backward(const std::string& at) { b_.attention_backward(slots_, at); }
  void wgrad(const std::string&) {}  // inside the TP backward

 private:
  tp_builder& b_;
  const ub::resolved_config& slots_;
};

/// The layer bodies of one rank, whatever families are on.
class layer_writer {
 public:
  layer_writer(emitter& e, int compute, const workload& w, int tp, tp_builder* tp_b,
               ep_builder* ep_b, const resolved_settings& r)
      : e_(e), compute_(compute), w_(w), tp_(tp), tp_b_(tp_b), ep_b_(ep_b), r_(r),
        whole_(e, compute, w, r.delay_wgrad_compute) {}

  bool moe() const { return w_.experts > 0 && w_.top_k > 0; }

  /// Forward of layer `l` for micro-batch `f` and/or backward of layer `bl` for micro-batch `b`
  /// (-1: absent); both at once only for MoE layers with an ep group (combined 1F1B).
  void run(int l, int f, int bl, int b) {
    if (tp_b_) {
      tp_attention attention(*tp_b_, r_.tp_comm_overlap_cfg);
      run_with(attention, l, f, bl, b);
    } else {
      run_with(whole_, l, f, bl, b);
    }
  }
  void start_pass() {
    if (ep_b_) ep_b_->reset_chains();
  }

 private:
  template <class Attention>
  void run_with(Attention& attention, int l, int f, int bl, int b) {
    if (moe() && ep_b_) {
      ep_b_->layer(attention, l, f, bl, b);
      return;
    }
    const std::string fat = "_l" + std::to_string(l) + "_mb" + std::to_string(f);
    const std::string bat = "_l" + std::to_string(bl) + "_mb" + std::to_string(b);
    const double experts = moe_expert_flops(w_, tp_);
    if (f >= 0) {
      if (moe()) {
        attention.forward(fat);
        e_.compute(compute_, "mlp_F" + fat, experts);
      } else if (tp_b_) {
        tp_b_->layer_forward(r_.tp_comm_overlap_cfg, fat);
      } else {
        e_.compute(compute_, "fwd" + fat, w_.layer_forward_flops());
      }
    }
    if (b >= 0) {
      if (moe()) {
        e_.compute(compute_, "mlp_B" + bat, 2 * experts);
        attention.backward(bat);
        attention.wgrad(bat);
      } else if (tp_b_) {
        tp_b_->layer_backward(r_.tp_comm_overlap_cfg, bat);
      } else {
        e_.compute(compute_, "bwd" + bat, 2 * w_.layer_forward_flops());
      }
    }
  }

  emitter& e_;
  int compute_;
  const workload& w_;
  int tp_;
  tp_builder* tp_b_;
  ep_builder* ep_b_;
  const resolved_settings& r_;
  whole_attention whole_;
};

/// Adds buffers to the first (reads) or last compute op issued since `from`.
inline void attach(program& p, std::size_t from, bool first, const std::vector<int>& reads,
                   const std::vector<int>& writes) {
  for (std::size_t k = 0; k < p.ops.size() - from; ++k) {
    op& o = p.ops[first ? from + k : p.ops.size() - 1 - k];
    if (o.kind != op_kind::compute) continue;
    o.reads.insert(o.reads.end(), reads.begin(), reads.end());
    o.writes.insert(o.writes.end(), writes.begin(), writes.end());
    return;
  }
}

inline std::string index_name(const char* prefix, int value) {
  return prefix + std::to_string(value);
}

}  // namespace detail

/// The programs of every rank of the layout `s` gives (valid settings: see `validate`), with the
/// families in `on`. Throws std::invalid_argument for sizes the schedule cannot split (layers
/// not a multiple of pp x vpp, micro-batches not a multiple of pp with vpp, ep not dividing dp).
inline std::vector<program> compose_step(const settings& s, const resolved_settings& r,
                                         const workload& w, family_set on = {}) {
  const bool moe = w.experts > 0 && w.top_k > 0;
  const int tp = on.tp ? s.tensor_model_parallel_size : 1;
  const int pp = on.pp ? s.pipeline_model_parallel_size : 1;
  const int chunks = pp > 1 ? s.virtual_pipeline_model_parallel_size.value_or(1) : 1;
  const int ep = on.ep && moe ? s.expert_model_parallel_size : 1;
  const int dp = on.dp ? s.data_parallel_size : 1;
  // Ranks along the data-parallel dimension: the dp group, or as many as the ep group needs.
  const int data = on.dp ? dp : (ep + tp - 1) / tp;
  if ((tp * data) % ep != 0)
    throw std::invalid_argument("ep (" + std::to_string(ep) + ") must divide tp x dp (" +
                                std::to_string(tp * data) + ")");
  const int etp = on.tp ? s.expert_tensor_parallel_size.value_or(s.tensor_model_parallel_size) : 1;
  if (ep > 1 && etp > 1)
    throw std::invalid_argument("expert tensor parallelism (etp " + std::to_string(etp) +
                                ") is not modelled with ep > 1: set expert_tensor_parallel_size<1>");
  if (w.layers % (pp * chunks) != 0)
    throw std::invalid_argument("layers (" + std::to_string(w.layers) +
                                ") must be a multiple of pp x vpp (" + std::to_string(pp * chunks) + ")");
  const bool combined = ep > 1 && r.overlap_moe_expert_parallel_comm;
  const int per_chunk = w.layers / (pp * chunks);
  const std::int64_t h = w.hidden;
  // Expert parameters of a rank: E / ep experts, split over tp only without ep (etp = tp).
  const std::int64_t experts_per_layer =
      moe ? std::int64_t{w.experts} / ep * 3 * h * w.moe_ffn_hidden / (ep > 1 ? 1 : tp) : 0;
  const std::int64_t dense_per_layer = (moe ? 4 * h * h : w.layer_parameters()) / tp;
  const std::int64_t activation = w.tokens() * h * w.element_bytes() / tp;  // sequence parallel
  const auto rank_of = [&](int t, int d, int stage) { return t + tp * (d + data * stage); };
  // Experts tile the tp x dp ranks of a stage (etp 1): ep groups of consecutive ranks, and the
  // expert-data-parallel group of the ranks at the same place in their ep group.
  const auto expert_ranks = [&](int first, int stride, int count, int stage) {
    std::vector<int> ranks;
    for (int k = 0; k < count; ++k) ranks.push_back(rank_of((first + k * stride) % tp, (first + k * stride) / tp, stage));
    return ranks;
  };

  std::vector<program> step;
  for (int stage = 0; stage < pp; ++stage)
    for (int d = 0; d < data; ++d)
      for (int t = 0; t < tp; ++t) {
        program p;
        p.rank = rank_of(t, d, stage);
        detail::emitter e(p);
        const int compute = e.add_stream(stream_role::compute, 0);
        const std::string at_stage = detail::index_name(".s", stage);

        std::optional<detail::tp_builder> tp_b;
        if (tp > 1) {
          std::vector<int> ranks;
          for (int k = 0; k < tp; ++k) ranks.push_back(rank_of(k, d, stage));
          tp_b.emplace(e, compute, "tp" + at_stage + detail::index_name(".d", d), ranks, t, w);
        }
        std::vector<detail::dp_part> parts;
        if (on.dp) {
          detail::dp_part dense{"dp" + at_stage + detail::index_name(".t", t), {},
                                dense_per_layer + (ep == 1 ? experts_per_layer : 0)};
          for (int k = 0; k < dp; ++k) dense.ranks.push_back(rank_of(t, k, stage));
          parts.push_back(std::move(dense));
          if (ep > 1) {
            const int x = t + tp * d;
            parts.push_back({"edp" + at_stage + detail::index_name(".e", x % ep),
                             expert_ranks(x % ep, ep, tp * data / ep, stage), experts_per_layer});
          }
        }
        detail::dp_buckets dp_b(e, compute, std::move(parts), per_chunk * chunks, s, r, w);
        std::optional<detail::ep_builder> ep_b;
        if (ep > 1) {
          const int x = t + tp * d;
          ep_b.emplace(e, compute, "ep" + at_stage + detail::index_name(".g", x / ep),
                       expert_ranks(x / ep * ep, 1, ep, stage), w, tp, r.delay_wgrad_compute);
        }
        std::optional<detail::pp_stage> pipe;
        if (pp > 1) {
          std::vector<int> ranks;
          for (int k = 0; k < pp; ++k) ranks.push_back(rank_of(t, d, k));
          pipe.emplace(e, compute, stage, ranks,
                       detail::index_name(".t", t) + detail::index_name(".d", d), chunks,
                       w.micro_batches, combined ? 1 : 0, activation, r.overlap_p2p_comm);
        }
        detail::layer_writer layers(e, compute, w, tp, tp_b ? &*tp_b : nullptr,
                                    ep_b ? &*ep_b : nullptr, r);
        const std::vector<pp_action> order =
            pipe ? pipe->order() : pipeline_order(0, 1, 1, w.micro_batches, combined ? 1 : 0);
        const int warmup = pipeline_warmup(stage, pp, chunks, w.micro_batches, combined ? 1 : 0);
        // Layer j of action a: its global and its local (this stage's) index.
        const auto global = [&](const pp_action& a, int j) {
          return (a.chunk * pp + stage) * per_chunk + j;
        };
        const auto local = [&](const pp_action& a, int j) { return a.chunk * per_chunk + j; };

        dp_b.prologue();
        for (std::size_t i = 0; i < order.size(); ++i) {
          const pp_action& a = order[i];
          const bool paired = combined && steady_pair(i, warmup, order.size());
          const pp_action* fwd = a.forward ? &a : nullptr;
          const pp_action* bwd = paired ? &order[i + 1] : a.forward ? nullptr : &a;
          if (pipe) pipe->before(i);
          if (pipe && paired) pipe->before(i + 1);
          layers.start_pass();
          for (int j = 0; j < per_chunk; ++j) {
            const std::size_t from = p.ops.size();
            const int fl = fwd ? local(*fwd, j) : -1, bl = bwd ? local(*bwd, per_chunk - 1 - j) : -1;
            if (fwd) dp_b.before_forward(fl);
            layers.run(fwd ? global(*fwd, j) : -1, fwd ? fwd->micro_batch : -1,
                       bwd ? global(*bwd, per_chunk - 1 - j) : -1, bwd ? bwd->micro_batch : -1);
            if (fwd) detail::attach(p, from, true, dp_b.params(fl), {});
            if (bwd) {
              std::vector<int> reads = dp_b.params(bl);
              for (const int g : dp_b.grads(bl)) reads.push_back(g);
              detail::attach(p, from, false, reads, dp_b.grads(bl));
              dp_b.after_backward(bl, bwd->micro_batch);
            }
          }
          if (pipe) pipe->after(i);
          if (pipe && paired) pipe->after(i + 1);
          if (paired) ++i;
        }
        if (ep_b) ep_b->finish();
        if (pipe) pipe->finish();
        if (on.dp) {
          dp_b.set_replicated_parameters((dense_per_layer + experts_per_layer) * per_chunk * chunks);
          dp_b.epilogue();
        }
        step.push_back(std::move(p));
      }
  return step;
}

/// One step of the TP family alone: a tp group.
inline std::vector<program> tensor_parallel_step(const settings& s, const resolved_settings& r,
                                                 const workload& w) {
  return compose_step(s, r, w, {.tp = true, .dp = false, .pp = false, .ep = false});
}
/// One step of the DP family alone: a data-parallel group and its optimizer.
inline std::vector<program> data_parallel_step(const settings& s, const resolved_settings& r,
                                               const workload& w) {
  return compose_step(s, r, w, {.tp = false, .dp = true, .pp = false, .ep = false});
}
/// One step of the PP family alone: a pipeline.
inline std::vector<program> pipeline_parallel_step(const settings& s, const resolved_settings& r,
                                                   const workload& w) {
  return compose_step(s, r, w, {.tp = false, .dp = false, .pp = true, .ep = false});
}
/// One step of the EP family alone: an ep group of MoE layers.
inline std::vector<program> expert_parallel_step(const settings& s, const resolved_settings& r,
                                                 const workload& w) {
  return compose_step(s, r, w, {.tp = false, .dp = false, .pp = false, .ep = true});
}

/// A family's part of a config type's schedule, and whether its overlap is on.
template <family F, bool Overlapped>
struct component {
  static constexpr schedule::family family = F;
  static constexpr bool overlapped = Overlapped;
};

/// The schedule of config type `Cfg` (`Cfg::schedule`): `components` is a std::tuple with one
/// `component` per family the layout enables (tp, dp, pp, ep with sizes > 1; ep only where the
/// workload has experts at run time), fixed at compile time.
template <class Cfg>
struct step_schedule {
 private:
  static constexpr settings s = Cfg::settings;
  static constexpr resolved_settings r = Cfg::resolved;
  template <bool On, family F, bool Overlapped>
  using part = std::conditional_t<On, std::tuple<component<F, Overlapped>>, std::tuple<>>;

 public:
  using components = decltype(std::tuple_cat(
      part<(s.tensor_model_parallel_size > 1), family::tp, r.tp_comm_overlap>{},
      part<(s.data_parallel_size > 1), family::dp, r.overlap_grad_reduce || r.overlap_param_gather>{},
      part<(s.pipeline_model_parallel_size > 1), family::pp, r.overlap_p2p_comm>{},
      part<(s.expert_model_parallel_size > 1), family::ep, r.overlap_moe_expert_parallel_comm>{}));

  /// The programs of every rank for one step of `w`.
  static std::vector<program> generate(const workload& w) { return compose_step(s, r, w); }
};

}  // namespace overlap::schedule
