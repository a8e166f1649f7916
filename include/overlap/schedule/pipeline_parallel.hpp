#pragma once
/// @file
/// The PP family's builder: the order and the communication of one stage of a pipeline of `pp`
/// stages, each holding `vpp` model chunks (1 without vpp), in upstream's order:
/// - non-interleaved 1F1B: stage s runs min(pp - s - 1, m) warm-up forwards, then alternates one
///   forward and one backward, then drains the remaining backwards;
/// - interleaved 1F1B (vpp): virtual micro-batches ordered by the schedule table (groups of `pp`
///   micro-batches per chunk), (pp - s - 1) * 2 + (vpp - 1) * pp warm-up forwards, then steady
///   1F1B, then the cool-down backwards. Chunk c of stage s holds layers (c * pp + s) * L / (pp *
///   vpp) onwards; the last stage's chunk c feeds the first stage's chunk c + 1.
///
/// Communication, as `cfg::resolved` says:
/// - batch_p2p_comm: the sends that follow a compute step and the receives the next step needs
///   form one NCCL group on one communicator per neighbouring pair, and the compute stream waits
///   for the whole group at once, so pipeline communication is exposed. A step is one action,
///   except in the steady state of the interleaved schedule, where it is a forward and backward
///   pair (upstream's send_forward_backward_recv_forward_backward; one group per action there
///   can deadlock, which the verifier shows);
/// - overlap_p2p_comm: each direction of each link has its own communicator and sends and
///   receives their own streams; the receive an action needs is posted as soon as the previous
///   action of its kind has finished (send_forward_recv_forward), so it runs under the compute in
///   between, and the compute stream waits for it only right before the action.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/schedule/emitter.hpp>
#include <overlap/schedule/layout.hpp>
#include <overlap/schedule/workload.hpp>
#include <overlap/settings/resolved.hpp>
#include <overlap/settings/settings.hpp>

namespace overlap::schedule {

/// The forward or backward of one micro-batch through one model chunk of a stage.
struct pp_action {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;
  friend bool operator==(const pp_action&, const pp_action&) = default;
};

/// How many forwards stage `stage` runs before its first backward: (pp - s - 1) (+ (pp - s - 1)
/// + (vpp - 1) * pp interleaved) + `extra_warmup`, at most every action of the step.
inline int pipeline_warmup(int stage, int stages, int chunks, int micro_batches, int extra_warmup = 0) {
  const int total = micro_batches * chunks;
  const int interleaved = chunks > 1 ? (stages - stage - 1) + (chunks - 1) * stages : 0;
  return std::min(total, stages - stage - 1 + interleaved + extra_warmup);
}

/// Whether action i of an order of `actions` actions with `warmup` warm-up forwards is a
/// steady-state forward, which upstream runs together with the backward that follows it.
inline bool steady_pair(std::size_t i, int warmup, std::size_t actions) {
  const auto w = static_cast<std::size_t>(warmup);
  return i >= w && (i - w) % 2 == 0 && (i - w) / 2 < actions / 2 - w;
}

/// One stage's order with `chunks` model chunks per stage (1: non-interleaved 1F1B) and
/// `extra_warmup` more warm-up forwards (1 with EP overlap, whose steady state pairs the forward
/// of one micro-batch with the backward of the previous one). Throws std::invalid_argument where
/// upstream refuses the interleaved schedule (micro-batches not a multiple of the stages).
inline std::vector<pp_action> pipeline_order(int stage, int stages, int chunks, int micro_batches,
                                             int extra_warmup = 0) {
  if (chunks > 1 && micro_batches % stages != 0)
    throw std::invalid_argument("interleaved 1F1B needs micro-batches (" + std::to_string(micro_batches) +
                                ") to be a multiple of pp (" + std::to_string(stages) +
                                "): upstream's dependency bubbles");
  // Virtual micro-batch k -> (micro-batch, chunk) of its forward: groups of `stages`
  // micro-batches per chunk (one group of all micro-batches without interleaving).
  const int group = chunks > 1 ? stages : micro_batches;
  std::vector<pp_action> table;
  for (int first = 0; first < micro_batches; first += group)
    for (int c = 0; c < chunks; ++c)
      for (int mb = first; mb < first + group; ++mb) table.push_back({true, mb, c});
  const int total = static_cast<int>(table.size());
  const int warmup = pipeline_warmup(stage, stages, chunks, micro_batches, extra_warmup);
  const auto backward = [&](int k) { return pp_action{false, table[k].micro_batch, chunks - 1 - table[k].chunk}; };
  std::vector<pp_action> order;
  for (int k = 0; k < warmup; ++k) order.push_back(table[k]);
  for (int k = 0; k + warmup < total; ++k) {
    order.push_back(table[k + warmup]);
    order.push_back(backward(k));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(backward(k));
  return order;
}

namespace detail {

/// The pipeline communication of one stage's program: call `before(i)` ahead of action i's
/// compute, `after(i)` behind it, and `finish()` at the end of the step. `stage_ranks` holds the
/// global rank of every stage of this pipeline; `suffix` tells this pipeline's communicators
/// from those of the other pipelines of the layout.
class pp_stage {
 public:
  pp_stage(emitter& e, int compute_stream, int stage, const group& pipeline, int chunks, std::vector<int> first_layers,
           int micro_batches, int extra_warmup, std::int64_t activation_bytes, bool overlap)
      : e_(e),
        compute_(compute_stream),
        stage_(stage),
        stages_(static_cast<int>(pipeline.ranks.size())),
        chunks_(chunks),
        first_(std::move(first_layers)),
        ranks_(pipeline.ranks),
        suffix_(pipeline.name.substr(2)),
        bytes_(activation_bytes),
        overlap_(overlap),
        order_(pipeline_order(stage, stages_, chunks, micro_batches, extra_warmup)),
        warmup_(pipeline_warmup(stage, stages_, chunks, micro_batches, extra_warmup)),
        posted_(order_.size(), -1),
        step_start_(order_.size(), true),
        first_stream_(static_cast<int>(e.target().streams.size())) {
    // Interleaved (or EP-paired) steady state: a forward directly followed by a backward is one
    // step.
    if (chunks > 1 || extra_warmup > 0)
      for (std::size_t i = 0; i < order_.size(); ++i)
        if (paired(i)) step_start_[i + 1] = false;
    // Batched: one stream for the groups. Overlapped: a stream per direction and kind, as NCCL
    // gives each communicator its own, so a receive still waiting on one neighbour does not
    // hold up the other direction.
    const int streams = overlap_ ? 4 : 1;
    for (int k = 0; k < streams; ++k) e_.add_stream(k < 2 ? stream_role::pp_send : stream_role::pp_recv, -1);
  }

  const std::vector<pp_action>& order() const { return order_; }
  /// Whether action i is a steady-state forward (see `steady_pair`).
  bool paired(std::size_t i) const { return steady_pair(i, warmup_, order_.size()); }

  void before(std::size_t i) {
    if (!overlap_) {
      if (!step_start_[i]) return;
      std::vector<op> recvs;
      for (std::size_t j = i; j < order_.size() && (j == i || !step_start_[j]); ++j)
        if (needs_input(order_[j])) recvs.push_back(transfer(op_kind::recv, order_[j]));
      flush(std::move(recvs));
      return;
    }
    if (needs_input(order_[i]) && posted_[i] < 0) post_recv(i);
    if (posted_[i] >= 0) wait(compute_, posted_[i]);
  }

  void after(std::size_t i) {
    const pp_action& a = order_[i];
    if (has_output(a)) {
      cross(compute_, stream_of(op_kind::send, a.forward));
      op o = transfer(op_kind::send, a);
      if (overlap_)
        push(std::move(o));
      else
        pending_.push_back(std::move(o));
    }
    if (!overlap_) return;
    for (std::size_t j = i + 1; j < order_.size(); ++j)
      if (order_[j].forward == a.forward) {
        if (needs_input(order_[j]) && posted_[j] < 0) post_recv(j);
        break;
      }
  }

  void finish() {
    if (!overlap_)
      flush({});
    else  // the step ends when the last sends have left
      for (const bool forward : {true, false}) cross(stream_of(op_kind::send, forward), compute_);
  }

 private:
  bool first_chunk(const pp_action& a) const { return stage_ == 0 && a.chunk == 0; }
  bool last_chunk(const pp_action& a) const { return stage_ + 1 == stages_ && a.chunk + 1 == chunks_; }
  bool needs_input(const pp_action& a) const { return a.forward ? !first_chunk(a) : !last_chunk(a); }
  bool has_output(const pp_action& a) const { return a.forward ? !last_chunk(a) : !first_chunk(a); }

  /// The recv of action `a`'s input or the send of its output.
  op transfer(op_kind kind, const pp_action& a) {
    // Link l joins stage l to stage l + 1 (mod pp): an action's output goes down its own link
    // going forward and up the previous one going backward; its input comes the other way.
    const int link = a.forward == (kind == op_kind::send) ? stage_ : prev();
    const int peer_stage = link == stage_ ? next() : prev();
    std::string name = "pp" + std::to_string(link);
    if (overlap_) name += a.forward ? "_fwd" : "_bwd";
    const int comm = e_.comm(name + suffix_, {ranks_[link], ranks_[(link + 1) % stages_]});
    const int peer = e_.target().comms[comm].ranks[0] == ranks_[peer_stage] ? 0 : 1;
    const bool send = kind == op_kind::send;
    const op_type type = a.forward ? (send ? op_type::pp_send_forward : op_type::pp_recv_forward)
                                   : (send ? op_type::pp_send_backward : op_type::pp_recv_backward);
    // The chunk's boundary activations: forward sends the output of its last layer and receives
    // the input of its first; backward the other way round with their gradients.
    const auto v = static_cast<std::size_t>(a.chunk * stages_ + stage_);
    const int layer = a.forward == send ? first_[v + 1] : first_[v];
    const int data = e_.buffer(a.forward ? activation(layer, a.micro_batch) : activation_grad(layer, a.micro_batch));
    op o{.kind = kind,
         .stream = stream_of(kind, a.forward),
         .key = {.type = type, .at = {.micro_batch = a.micro_batch, .chunk = a.chunk}},
         .comm = comm,
         .peer = peer,
         .bytes = bytes_};
    (send ? o.reads : o.writes).push_back(data);
    return o;
  }
  /// The first stream this class added is the batched one, or the forward send stream followed
  /// by the backward send, forward recv and backward recv streams.
  int stream_of(op_kind kind, bool forward) const {
    if (!overlap_) return first_stream_;
    return first_stream_ + (kind == op_kind::send ? 0 : 2) + (forward ? 0 : 1);
  }
  int next() const { return (stage_ + 1) % stages_; }
  int prev() const { return (stage_ + stages_ - 1) % stages_; }

  void post_recv(std::size_t i) {
    push(transfer(op_kind::recv, order_[i]));
    posted_[i] = record(stream_of(op_kind::recv, order_[i].forward));
  }
  /// Batched mode: the pending sends and `recvs` as one group; the compute stream waits for it.
  void flush(std::vector<op> recvs) {
    for (op& o : recvs) pending_.push_back(std::move(o));
    if (pending_.empty()) return;
    const int group = e_.new_group();
    for (op& o : pending_) {
      o.group = group;
      push(std::move(o));
    }
    pending_.clear();
    cross(first_stream_, compute_);
  }
  void push(op o) { e_.push(std::move(o)); }
  int record(int stream) { return e_.record(stream); }
  void wait(int stream, int event) { e_.wait(stream, event); }
  void cross(int from, int to) { e_.cross(from, to); }

  emitter& e_;
  int compute_, stage_, stages_, chunks_;
  std::vector<int> first_;  ///< per virtual stage, its first layer; the layer count last
  std::vector<int> ranks_;
  std::string suffix_;
  std::int64_t bytes_;
  bool overlap_;
  std::vector<pp_action> order_;
  int warmup_;
  std::vector<int> posted_;       ///< per action: the event of its posted receive, or -1
  std::vector<bool> step_start_;  ///< batched mode: whether action i starts a step
  std::vector<op> pending_;       ///< batched mode: sends waiting for the next group
  int first_stream_ = 0;
};

}  // namespace detail

}  // namespace overlap::schedule
