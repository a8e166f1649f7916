#pragma once
/// @file
/// How a pipeline's transformer layers are split over its virtual stages, as Megatron-Core splits
/// them: chunk c of pipeline stage p is virtual stage c x pp + p (its `pipeline_model_parallel_layout`
/// lists stages in that order). Evenly by default; with `num_layers_in_first_pipeline_stage` /
/// `..._last_...` the named stages take those counts and the others share the rest evenly, each
/// stage's layers then split evenly over its chunks; with `account_for_embedding_in_pipeline_split`
/// / `account_for_loss_in_pipeline_split` the embedding and the loss each count as a layer of the
/// first and the last virtual stage; a layout string gives every virtual stage's layers by hand.

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <overlap/schedule/workload.hpp>

namespace overlap::schedule {

/// One virtual stage of a `pipeline_model_parallel_layout`: how many of each kind it holds.
struct layout_stage {
  int embedding = 0, layers = 0, mtp = 0, loss = 0;
  friend constexpr bool operator==(const layout_stage&, const layout_stage&) = default;
};

/// Reads Megatron-Core's layout string: stages separated by '|', 'E' the embedding, 't' a
/// transformer layer, 'm' a multi-token-prediction layer, 'L' the loss; "(group)*n" repeats a
/// group (no nesting; its "x*n" too) and "x*n" one character; commas are cosmetic. Throws std::invalid_argument
/// naming the first character it cannot read.
inline std::vector<layout_stage> parse_pipeline_layout(std::string_view text) {
  const auto bad = [&](std::size_t at, const std::string& what) {
    throw std::invalid_argument("pipeline_model_parallel_layout \"" + std::string(text) + "\": " + what +
                                " at character " + std::to_string(at + 1));
  };
  // A count after '*': digits, at most 100,000 (a layout longer than that is not a model's).
  const auto count_at = [&](std::size_t& i) {
    if (i >= text.size() || text[i] != '*') return 1L;
    const std::size_t star = i++;
    long n = 0;
    const std::size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && n <= 100000) n = n * 10 + (text[i++] - '0');
    if (i == digits) bad(star, "'*' needs a count");
    if (n > 100000) bad(digits, "the count is over 100,000");
    return n;
  };
  // Unrolls text[from, to): a group's inside (no '(' there) or the whole layout. As Megatron-Core
  // reads it, a group repeats what it holds, "x*n" included.
  const auto unroll = [&](std::size_t from, std::size_t to, auto& self) -> std::string {
    std::string flat;
    const auto repeat = [&](const std::string& what, long n, std::size_t at) {
      for (long k = 0; k < n && flat.size() < 1000000; ++k) flat.append(what);
      if (flat.size() >= 1000000) bad(at, "the layout unrolls to over a million entries");
    };
    for (std::size_t i = from; i < to;) {
      const char c = text[i];
      if (c == ',' || c == ' ') {
        ++i;
      } else if (c == '(') {
        const std::size_t close = text.find(')', i);
        if (close == std::string_view::npos || close >= to) bad(i, "'(' is not closed");
        const std::size_t at = i;
        if (text.substr(i + 1, close - i - 1).find('(') != std::string_view::npos) bad(i, "groups do not nest");
        const std::string group = self(i + 1, close, self);
        i = close + 1;
        repeat(group, count_at(i), at);
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        const std::size_t at = i++;
        repeat(std::string(1, c), count_at(i), at);
      } else {
        bad(i, std::string("unexpected '") + c + "' (E, t, m, L, |, (...)*n, x*n)");
      }
    }
    return flat;
  };
  const std::string flat = unroll(0, text.size(), unroll);
  std::vector<layout_stage> out(1);
  for (const char c : flat) {
    layout_stage& s = out.back();
    if (c == '|')
      out.emplace_back();
    else if (c == 'E')
      ++s.embedding;
    else if (c == 't')
      ++s.layers;
    else if (c == 'm')
      ++s.mtp;
    else
      ++s.loss;
  }
  return out;
}

/// The transformer layers of each virtual stage (index c x pp + p) of a pipeline of `pp` stages
/// of `chunks` chunks each, from `w` (a layout must also hold `mtp_layers` 'm's); appends to
/// `problems` what makes the split impossible (and then returns an empty vector).
inline std::vector<int> split_layers(const workload& w, int pp, int chunks, int mtp_layers,
                                     std::vector<std::string>& problems) {
  const int stages = pp * chunks;
  const std::size_t before = problems.size();
  const auto need = [&](bool ok, const std::string& what) {
    if (!ok) problems.push_back(what);
  };
  const std::string pp_vpp = "pp x vpp (" + std::to_string(stages) + ")";
  std::vector<int> out(static_cast<std::size_t>(stages), 0);
  const bool uneven = w.num_layers_in_first_pipeline_stage > 0 || w.num_layers_in_last_pipeline_stage > 0;
  const bool accounted = w.account_for_embedding_in_pipeline_split || w.account_for_loss_in_pipeline_split;
  need(!w.pipeline_layout.empty() + uneven + accounted <= 1,
       "pipeline_model_parallel_layout, num_layers_in_first/last_pipeline_stage and "
       "account_for_embedding/loss_in_pipeline_split exclude each other: give one way to split the layers");
  need(w.num_layers_in_first_pipeline_stage >= 0 && w.num_layers_in_last_pipeline_stage >= 0,
       "num_layers_in_first/last_pipeline_stage must not be negative (0: not set)");
  if (problems.size() > before) return {};
  if (!w.pipeline_layout.empty()) {
    std::vector<layout_stage> layout;
    try {
      layout = parse_pipeline_layout(w.pipeline_layout);
    } catch (const std::invalid_argument& e) {
      problems.push_back(e.what());
      return {};
    }
    need(static_cast<int>(layout.size()) == stages,
         "pipeline_model_parallel_layout has " + std::to_string(layout.size()) + " stages, not " + pp_vpp);
    if (problems.size() > before) return {};
    int layers = 0, mtp = 0;
    for (std::size_t v = 0; v < layout.size(); ++v) {
      const layout_stage& s = layout[v];
      out[v] = s.layers;
      layers += s.layers;
      mtp += s.mtp;
      need(s.embedding == (v == 0 ? 1 : 0),
           "pipeline_model_parallel_layout: the embedding 'E' must be once, in the first stage");
      need(s.loss == (v + 1 == layout.size() ? 1 : 0),
           "pipeline_model_parallel_layout: the loss 'L' must be once, in the last stage");
    }
    need(layers == w.num_layers, "pipeline_model_parallel_layout has " + std::to_string(layers) +
                                     " transformer layers ('t'), num_layers is " + std::to_string(w.num_layers));
    need(mtp == mtp_layers, "pipeline_model_parallel_layout has " + std::to_string(mtp) +
                                " MTP layers ('m'), mtp_num_layers is " + std::to_string(mtp_layers));
  } else if (uneven) {
    const int first = w.num_layers_in_first_pipeline_stage, last = w.num_layers_in_last_pipeline_stage;
    const int ends = (first > 0) + (last > 0);
    const int middle_stages = pp - ends, middle_layers = w.num_layers - first - last;
    need(pp > 1, "num_layers_in_first/last_pipeline_stage need a pipeline (pp > 1)");
    need(middle_layers >= 0, "num_layers_in_first/last_pipeline_stage exceed num_layers");
    need(middle_stages > 0 ? middle_layers % middle_stages == 0 : middle_layers == 0,
         "the layers left by num_layers_in_first/last_pipeline_stage (" + std::to_string(middle_layers) +
             ") must split evenly over the other " + std::to_string(middle_stages) + " stages");
    if (problems.size() > before) return {};
    for (int p = 0; p < pp; ++p) {
      const int here = p == 0 && first > 0 ? first : p + 1 == pp && last > 0 ? last : middle_layers / middle_stages;
      need(here % chunks == 0, "pipeline stage " + std::to_string(p) + "'s " + std::to_string(here) +
                                   " layers must split evenly over its " + std::to_string(chunks) + " chunks (vpp)");
      for (int c = 0; c < chunks; ++c) out[static_cast<std::size_t>(c * pp + p)] = here / chunks;
    }
  } else {
    const int extra = w.account_for_embedding_in_pipeline_split + w.account_for_loss_in_pipeline_split;
    const int total = w.num_layers + extra;
    need(total % stages == 0, "num_layers (" + std::to_string(w.num_layers) +
                                  (extra ? " + " + std::to_string(extra) + " for the embedding/loss" : std::string()) +
                                  ") must be a multiple of " + pp_vpp +
                                  " (Megatron-Core refuses it too); give pipeline_model_parallel_layout or "
                                  "num_layers_in_first/last_pipeline_stage for an uneven split");
    if (problems.size() > before) return {};
    out.assign(static_cast<std::size_t>(stages), total / stages);
    if (w.account_for_embedding_in_pipeline_split) --out.front();
    if (w.account_for_loss_in_pipeline_split) --out.back();
    need(out.front() >= 0 && out.back() >= 0, "the embedding and loss leave a virtual stage fewer than 0 layers");
  }
  if (problems.size() > before) return {};
  return out;
}

}  // namespace overlap::schedule
