#pragma once
/// @file
/// The SVG timeline writer: a simulated step as one standalone picture that any browser shows,
/// for reports and code review where a trace viewer is not at hand. One row per (rank, stream), a
/// time axis, one bar per op coloured by what it is (compute, or the family of its
/// communication), the op's name as a tooltip, a legend and the step time. Above the ranks, a
/// summary lane per family shows when its communication is exposed (no compute beside it on that
/// rank) on any rank drawn. Bars closer than half a pixel merge, so the picture stays bounded by
/// its pixels, not by the ops, at any scale (a merged bar's tooltip counts its ops).

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/sim/result.hpp>
#include <overlap/trace/chrome_trace.hpp>

namespace overlap::trace {

/// The size of the picture, in pixels, and how ranks are named.
struct svg_options {
  int width = 1200;      ///< the whole picture, row labels included; the time axis gets at least
                         ///< 100 pixels however small this is
  int row_height = 18;   ///< one (rank, stream) row; labels are 11 pixels high, so keep it >= 12
  /// A rank's name in its rows ("rank 32 (class of 8)" by default); a caller that knows the layout
  /// adds the rank's coordinates (pipeline stage, tp, dp, ep).
  std::function<std::string(int rank)> rank_name{};
  /// The per-family lanes of exposed communication, and the memory lane: the memory over the
  /// step (sim::memory_curve) of the rank whose buffers take the most at once.
  bool summary_lanes = true;
  /// At most about this many bars: beyond it, bars narrower than 2, 4, 8, ... pixels merge with
  /// their neighbours of the same row and category too (a few MB of SVG at any scale).
  std::size_t max_bars = 20000;
};

namespace detail {

/// `s` as XML text or attribute value. Control characters that XML 1.0 cannot carry at all
/// become U+FFFD, so that a stray byte in an op name cannot make the picture unreadable.
inline void write_xml_text(std::ostream& os, std::string_view s) {
  for (const char c : s) {
    switch (c) {
      case '<': os << "&lt;"; break;
      case '>': os << "&gt;"; break;
      case '&': os << "&amp;"; break;
      case '"': os << "&quot;"; break;
      case '\'': os << "&apos;"; break;
      case '\t':
      case '\n':
      case '\r': os << c; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) os << "&#xFFFD;";
        else os << c;
    }
  }
}

/// A coordinate with two decimals (finer than any screen shows), whatever the stream's locale.
inline std::string px(double v) {
  char buf[64];
  const auto written = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 2);
  return std::string(buf, written.ptr);
}

/// Tableau 10 colours, told apart easily on screen and in print; indexed by `category`, grey last
/// (none).
inline constexpr std::array<std::string_view, 10> tableau{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                                         "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"};
static_assert(num_categories <= tableau.size(), "a colour per category");
inline constexpr auto category_colours = [] {
  std::array<std::string_view, num_categories> out{};
  for (std::size_t c = 0; c + 1 < num_categories; ++c) out[c] = tableau[c];
  out[num_categories - 1] = "#9c9c9c";
  return out;
}();

/// The legend's word for a category; "none" would read as "nothing drawn in this colour".
inline std::string_view legend_name(category c) {
  return c == category::none ? "other" : category_name(c);
}

inline constexpr std::string_view micro = "\xc2\xb5";  // U+00B5 MICRO SIGN, in UTF-8

/// A time for people: in milliseconds when `in_ms`, else microseconds, to the nanosecond.
inline std::string time_text(double us, bool in_ms) {
  if (in_ms) return us_text(to_ns(us / 1000)) + " ms";
  return us_text(to_ns(us)) + " " + std::string(micro) + "s";
}

/// A time span [begin, end) in microseconds.
struct span {
  double begin = 0, end = 0;
};
/// `v` as disjoint spans in time order, joining those closer than `gap`.
inline std::vector<span> merged(std::vector<span> v, double gap = 0) {
  std::sort(v.begin(), v.end(), [](const span& a, const span& b) { return a.begin < b.begin; });
  std::vector<span> out;
  for (const span& s : v)
    if (!out.empty() && s.begin <= out.back().end + gap) out.back().end = std::max(out.back().end, s.end);
    else out.push_back(s);
  return out;
}
/// The parts of disjoint sorted spans `a` outside disjoint sorted spans `b`.
inline std::vector<span> minus(const std::vector<span>& a, const std::vector<span>& b) {
  std::vector<span> out;
  std::size_t k = 0;
  for (span s : a) {
    while (k < b.size() && b[k].end <= s.begin) ++k;
    for (std::size_t j = k; j < b.size() && b[j].begin < s.end; ++j) {
      if (b[j].begin > s.begin) out.push_back({s.begin, b[j].begin});
      s.begin = std::max(s.begin, b[j].end);
    }
    if (s.begin < s.end) out.push_back(s);
  }
  return out;
}

/// A round tick spacing (1, 2 or 5 times a power of ten) that gives the axis at most ~8 ticks.
inline double tick_step(double span_us) {
  const double raw = span_us / 8;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double normalized = raw / magnitude;
  const double nice = normalized <= 1 ? 1 : normalized <= 2 ? 2 : normalized <= 5 ? 5 : 10;
  return nice * magnitude;
}

}  // namespace detail

/// Writes `r`, the simulation of `programs`, as a standalone SVG picture (UTF-8, no external
/// resources). Rows are the streams of every rank in rank order, labelled "rank R <role>", plus
/// any (rank, stream) that only `r` mentions. Each interval that lasts at least a nanosecond is a
/// bar (at least half a pixel wide, so that short ops stay visible and hoverable) coloured by
/// category: compute for kernels, else the op's family (tp, dp, pp, ep; grey "other" for
/// unattributed ops); its `<title>` tooltip gives the op's name, category and times. Zero-length
/// intervals (event record/wait) and intervals with non-finite times are not drawn. The legend
/// lists the categories that occur; a dashed line marks the step time, and a deadlock is stated
/// in red in the header. With `classes` (the step simulated once per class: `programs` are the
/// representatives), rows are labelled "rank R (class of N) <role>".
inline void write_svg_timeline(std::ostream& os, const std::vector<schedule::program>& programs,
                               const sim::result& r, const svg_options& options = {},
                               const schedule::rank_classes* classes = nullptr) {
  const std::vector<int> sizes = classes ? classes->sizes() : std::vector<int>{};
  using detail::px;
  using detail::write_xml_text;
  const auto ranks_programs = detail::by_rank(programs);

  struct bar {
    std::size_t row;
    double start_us;
    double end_us;
    detail::category category;
    std::string label;
  };
  const auto rank_name = [&](int rank) {
    return options.rank_name ? options.rank_name(rank) : detail::rank_label(rank, classes ? &sizes : nullptr);
  };
  std::map<std::pair<int, int>, std::string> row_labels;
  for (const auto& p : programs) {
    const auto names = detail::stream_names(p);
    for (std::size_t s = 0; s < names.size(); ++s) row_labels[{p.rank, static_cast<int>(s)}] = rank_name(p.rank) + " " + names[s];
  }
  for (const auto& iv : r.intervals)
    row_labels.try_emplace({iv.rank, iv.stream}, rank_name(iv.rank) + " stream " + std::to_string(iv.stream));
  std::map<std::pair<int, int>, std::size_t> row_of;
  for (const auto& [key, label] : row_labels) row_of.emplace(key, row_of.size());

  std::vector<bar> bars;
  std::array<bool, detail::num_categories> used{};
  double span_us = std::isfinite(r.step_time_us) ? std::max(r.step_time_us, 0.0) : 0.0;
  // Per rank, its compute and each family's communication, for the exposed-communication lanes.
  std::map<int, std::array<std::vector<detail::span>, detail::num_categories>> by_rank;
  for (const auto& iv : r.intervals) {
    if (!detail::has_finite_times(iv) || detail::to_ns(iv.end_us) <= detail::to_ns(iv.start_us))
      continue;
    const detail::located at = detail::locate(ranks_programs, iv);
    const auto c = at.op ? detail::category_of(*at.op) : detail::category::none;
    used[static_cast<std::size_t>(c)] = true;
    span_us = std::max(span_us, iv.end_us);
    bars.push_back({row_of.at({iv.rank, iv.stream}), iv.start_us, iv.end_us, c,
                    detail::interval_label(at, iv)});
    if (options.summary_lanes) by_rank[iv.rank][static_cast<std::size_t>(c)].push_back({iv.start_us, iv.end_us});
  }
  if (span_us <= 0) span_us = 1;
  // Exposed: a family's communication with no compute of its rank beside it, on any rank.
  std::array<std::vector<detail::span>, detail::num_categories> exposed;
  for (auto& [rank, spans] : by_rank) {
    const std::vector<detail::span> compute = detail::merged(std::move(spans[0]));
    for (std::size_t c = 1; c < detail::num_categories; ++c)
      for (const detail::span& e : detail::minus(detail::merged(std::move(spans[c])), compute)) exposed[c].push_back(e);
  }
  std::vector<std::size_t> lanes;  // the categories with exposed time, in category order
  for (std::size_t c = 1; c < detail::num_categories; ++c)
    if (!exposed[c].empty()) lanes.push_back(c);

  // The memory lane: the program whose buffers take the most at once (skipped where the memory
  // analysis refuses a program's sizes or intervals).
  struct memory_lane {
    int rank = 0;
    std::int64_t peak = 0;
    std::vector<sim::memory_point> curve;
  };
  std::optional<memory_lane> memory;
  if (options.summary_lanes)
    for (const auto& p : programs) {
      try {
        std::vector<sim::memory_point> curve = sim::memory_curve(p, r.intervals);
        std::int64_t peak = 0;
        for (const sim::memory_point& point : curve) peak = std::max(peak, point.bytes);
        if (peak > 0 && (!memory || peak > memory->peak)) memory = memory_lane{p.rank, peak, std::move(curve)};
      } catch (const std::invalid_argument&) {
      }
    }

  std::size_t longest_label = 0;
  for (const auto& [key, label] : row_labels) longest_label = std::max(longest_label, label.size());
  // About 6.5 pixels per character of 11-pixel sans-serif, plus the margins on both sides.
  const double plot_left = std::max(60.0, 16 + 6.5 * static_cast<double>(longest_label));
  const double right_margin = 24;  // half of the last tick's label
  const double plot_width = std::max(100.0, options.width - plot_left - right_margin);
  const double width = plot_left + plot_width + right_margin;
  const double row_height = std::max(options.row_height, 2);
  const double lanes_top = 60;
  const double memory_height = memory ? 2 * row_height : 0;
  const double memory_top = lanes_top + static_cast<double>(lanes.size()) * row_height;
  const double rows_top = memory_top + memory_height + (lanes.empty() && !memory ? 0 : 6);
  const double rows_bottom = rows_top + static_cast<double>(row_labels.size()) * row_height;
  const double height = rows_bottom + 8;
  const auto x_of = [&](double us) { return plot_left + us / span_us * plot_width; };
  const bool in_ms = span_us >= 1000;

  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(width) << "\" height=\""
     << px(height) << "\" viewBox=\"0 0 " << px(width) << ' ' << px(height)
     << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  os << "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" << px(width) << "\" height=\""
     << px(height) << "\" fill=\"#ffffff\"/>\n";

  const std::string step_text =
      std::isfinite(r.step_time_us)
          ? "step time " + detail::time_text(r.step_time_us, r.step_time_us >= 1000)
          : std::string{};
  if (!step_text.empty()) {
    os << "<text x=\"8\" y=\"16\" font-size=\"13\" font-weight=\"bold\">";
    write_xml_text(os, step_text);
    os << "</text>\n";
  }
  // After the step time, at about 8 pixels per character of 13-pixel bold text.
  if (r.deadlock)
    os << "<text x=\"" << px(24 + 8 * static_cast<double>(step_text.size()))
       << "\" y=\"16\" font-size=\"13\" fill=\"#c00000\">"
       << "deadlock: the step did not finish (see the wait-for graph)</text>\n";

  double legend_x = 8;
  for (std::size_t c = 0; c < detail::num_categories; ++c) {
    if (!used[c]) continue;
    const auto name = detail::legend_name(static_cast<detail::category>(c));
    os << "<rect class=\"legend\" x=\"" << px(legend_x) << "\" y=\"25\" width=\"10\" height=\"10\" "
       << "fill=\"" << detail::category_colours[c] << "\"/><text x=\"" << px(legend_x + 14)
       << "\" y=\"34\">" << name << "</text>\n";
    legend_x += 14 + 6.5 * static_cast<double>(name.size()) + 16;
  }

  // Ticks are counted, not accumulated, so that rounding cannot add or drop the last one.
  const double step = detail::tick_step(span_us);
  const auto ticks = static_cast<int>(std::floor(span_us / step * (1 + 1e-9)));
  os << "<g class=\"axis\" stroke=\"#e0e0e0\">\n";
  for (int k = 0; k <= ticks; ++k)
    os << "<line x1=\"" << px(x_of(k * step)) << "\" y1=\"" << px(lanes_top - 6) << "\" x2=\""
       << px(x_of(k * step)) << "\" y2=\"" << px(rows_bottom) << "\"/>\n";
  os << "</g>\n<g class=\"ticks\" font-size=\"10\" text-anchor=\"middle\" fill=\"#404040\">\n";
  for (int k = 0; k <= ticks; ++k) {
    os << "<text x=\"" << px(x_of(k * step)) << "\" y=\"" << px(lanes_top - 10) << "\">";
    write_xml_text(os, detail::time_text(k * step, in_ms));
    os << "</text>\n";
  }
  os << "</g>\n";

  // The exposed-communication lanes, a pixel at a time: the share of each pixel's time that some
  // rank's communication of the family is exposed sets its opacity (runs of one level are one rect).
  if (!lanes.empty()) {
    os << "<g class=\"summary\">\n";
    const double pixel_us = span_us / plot_width;
    const auto pixels = static_cast<std::size_t>(std::ceil(plot_width)) + 1;
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      const std::size_t c = lanes[i];
      const double y = lanes_top + static_cast<double>(i) * row_height;
      os << "<text x=\"8\" y=\"" << px(y + row_height / 2 + 4) << "\">exposed ";
      write_xml_text(os, detail::legend_name(static_cast<detail::category>(c)));
      os << " (any rank)</text>\n";
      std::vector<double> share(pixels, 0);
      for (const detail::span& e : detail::merged(std::move(exposed[c])))
        for (auto k = static_cast<std::size_t>(e.begin / pixel_us); k < pixels && k * pixel_us < e.end; ++k)
          share[k] += (std::min(e.end, (k + 1) * pixel_us) - std::max(e.begin, k * pixel_us)) / pixel_us;
      for (std::size_t k = 0; k < pixels;) {
        const int level = static_cast<int>(std::ceil(std::min(share[k], 1.0) * 10));  // 0..10
        std::size_t j = k + 1;
        while (j < pixels && static_cast<int>(std::ceil(std::min(share[j], 1.0) * 10)) == level) ++j;
        if (level > 0)
          os << "<rect class=\"exposed\" x=\"" << px(x_of(k * pixel_us)) << "\" y=\"" << px(y + 2) << "\" width=\""
             << px(x_of(std::min(j * pixel_us, span_us)) - x_of(k * pixel_us)) << "\" height=\""
             << px(std::max(row_height - 4, 1.0)) << "\" fill=\"" << detail::category_colours[c]
             << "\" fill-opacity=\"" << px(level / 10.0) << "\"/>\n";
        k = j;
      }
    }
    os << "</g>\n";
  }

  // The memory lane, a pixel at a time: the most the rank holds within each pixel's time.
  if (memory) {
    os << "<g class=\"memory\">\n<text x=\"8\" y=\"" << px(memory_top + memory_height / 2 + 4) << "\">";
    write_xml_text(os, "memory of " + rank_name(memory->rank) + ", peak " +
                           px(static_cast<double>(memory->peak) / 1e9) + " GB");
    os << "</text>\n";
    const double pixel_us = span_us / plot_width;
    const auto pixels = static_cast<std::size_t>(std::ceil(plot_width)) + 1;
    std::vector<std::int64_t> most(pixels, 0);
    const std::vector<sim::memory_point>& c = memory->curve;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const double end = i + 1 < c.size() ? c[i + 1].at_us : span_us;
      auto k = static_cast<std::size_t>(std::clamp(c[i].at_us, 0.0, span_us) / pixel_us);
      do {
        if (k < pixels) most[k] = std::max(most[k], c[i].bytes);
        ++k;
      } while (k < pixels && static_cast<double>(k) * pixel_us < end);
    }
    const double bottom = memory_top + memory_height - 2, scale = (memory_height - 4) / static_cast<double>(memory->peak);
    os << "<polygon class=\"memory\" fill=\"#9c9c9c\" fill-opacity=\"0.7\" points=\"" << px(x_of(0)) << ',' << px(bottom);
    for (std::size_t k = 0; k < pixels; ++k) {
      const double y = bottom - static_cast<double>(most[k]) * scale;
      os << ' ' << px(x_of(std::min(static_cast<double>(k) * pixel_us, span_us))) << ',' << px(y) << ' '
         << px(x_of(std::min(static_cast<double>(k + 1) * pixel_us, span_us))) << ',' << px(y);
    }
    os << ' ' << px(x_of(span_us)) << ',' << px(bottom) << "\"/>\n</g>\n";
  }

  os << "<g class=\"rows\">\n";
  std::optional<int> previous_rank;
  for (const auto& [key, label] : row_labels) {
    const double y = rows_top + static_cast<double>(row_of.at(key)) * row_height;
    // A darker line where a rank starts groups each rank's streams.
    const bool new_rank = previous_rank != key.first;
    previous_rank = key.first;
    os << "<line x1=\"0\" y1=\"" << px(y) << "\" x2=\"" << px(width) << "\" y2=\"" << px(y)
       << "\" stroke=\"" << (new_rank ? "#a0a0a0" : "#e8e8e8") << "\"/><text x=\"8\" y=\""
       << px(y + row_height / 2 + 4) << "\">";
    write_xml_text(os, label);
    os << "</text>\n";
  }
  os << "</g>\n";

  // A thin white outline separates back-to-back ops of one stream, which would read as one bar.
  os << "<g class=\"ops\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n";
  const double bar_height = std::max(row_height - 4, 1.0);
  // Sub-pixel bars of one row and category within half a pixel of each other merge: one rect,
  // its tooltip counting the ops (at most a bar per pixel per category and row). When that still
  // leaves more than `max_bars`, each row is drawn at a coarser resolution instead: a bin of 1, 2,
  // 4, ... pixels shows the category busy longest in it, and bins of one category in a row are one
  // bar, so that the picture is bounded by its pixels, not by the ops.
  std::stable_sort(bars.begin(), bars.end(), [](const bar& a, const bar& b) {
    return std::tie(a.row, a.category, a.start_us) < std::tie(b.row, b.category, b.start_us);
  });
  const double pixel_us = span_us / plot_width;
  const auto run_end = [&](std::size_t i, double& end_us) {
    end_us = bars[i].end_us;
    std::size_t j = i + 1;
    if (bars[i].end_us - bars[i].start_us >= pixel_us) return j;
    for (; j < bars.size() && bars[j].row == bars[i].row && bars[j].category == bars[i].category &&
           bars[j].start_us <= end_us + pixel_us / 2 && bars[j].end_us - bars[j].start_us < pixel_us;
         ++j)
      end_us = std::max(end_us, bars[j].end_us);
    return j;
  };
  std::size_t runs = 0;
  for (std::size_t i = 0; i < bars.size(); ++runs) {
    double ignored = 0;
    i = run_end(i, ignored);
  }
  const std::string us = " " + std::string(detail::micro) + "s";
  const auto draw = [&](std::size_t row, detail::category c, double start_us, double end_us, const std::string& head) {
    const double x = x_of(start_us);
    const double y = rows_top + static_cast<double>(row) * row_height + (row_height - bar_height) / 2;
    os << "<rect class=\"op\" x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\""
       << px(std::max(x_of(end_us) - x, 0.5)) << "\" height=\"" << px(bar_height) << "\" fill=\""
       << detail::category_colours[static_cast<std::size_t>(c)] << "\"><title>";
    const std::int64_t start = detail::to_ns(start_us), end = detail::to_ns(end_us);
    write_xml_text(os, head + "\n" + std::string(detail::category_name(c)) + ", " + detail::us_text(start) + " - " +
                           detail::us_text(end) + us + " (" + detail::us_text(end - start) + us + ")");
    os << "</title></rect>\n";
  };
  if (runs <= options.max_bars) {
    for (std::size_t i = 0; i < bars.size();) {
      double end_us = 0;
      const std::size_t j = run_end(i, end_us);
      draw(bars[i].row, bars[i].category, bars[i].start_us, end_us,
           j - i == 1 ? bars[i].label : std::to_string(j - i) + " ops from " + bars[i].label);
      i = j;
    }
  } else {
    // Per row: the busy time of each category in each bin, then runs of the bins' leaders.
    std::vector<std::vector<const bar*>> of_row(row_labels.size());
    for (const bar& b : bars) of_row[b.row].push_back(&b);
    const auto bins_of = [&](double bin_us) { return static_cast<std::size_t>(std::ceil(span_us / bin_us)) + 1; };
    struct run {
      std::size_t row;
      detail::category category;
      double start_us, end_us;
      std::size_t ops;
    };
    const auto binned = [&](double bin_us) {
      std::vector<run> out;
      const std::size_t bins = bins_of(bin_us);
      for (std::size_t row = 0; row < of_row.size(); ++row) {
        std::vector<std::array<double, detail::num_categories>> busy(bins);
        std::vector<std::size_t> starts(bins, 0);
        for (const bar* b : of_row[row]) {
          const auto first = static_cast<std::size_t>(b->start_us / bin_us), last = static_cast<std::size_t>(b->end_us / bin_us);
          ++starts[std::min(first, bins - 1)];
          for (std::size_t k = first; k <= last && k < bins; ++k)
            busy[k][static_cast<std::size_t>(b->category)] +=
                std::min(b->end_us, (k + 1) * bin_us) - std::max(b->start_us, k * bin_us);
        }
        for (std::size_t k = 0; k < bins; ++k) {
          const auto lead = std::max_element(busy[k].begin(), busy[k].end());
          if (*lead <= 0) continue;
          const auto c = static_cast<detail::category>(lead - busy[k].begin());
          if (!out.empty() && out.back().row == row && out.back().category == c && out.back().end_us >= k * bin_us) {
            out.back().end_us = std::min((k + 1) * bin_us, span_us);
            out.back().ops += starts[k];
          } else {
            out.push_back({row, c, k * bin_us, std::min((k + 1) * bin_us, span_us), starts[k]});
          }
        }
      }
      return out;
    };
    std::vector<run> drawn;
    for (double bin_us = pixel_us;; bin_us *= 2) {
      drawn = binned(bin_us);
      if (drawn.size() <= options.max_bars || bin_us >= span_us) break;
    }
    for (const run& x : drawn)
      draw(x.row, x.category, x.start_us, x.end_us,
           "mostly " + std::string(detail::legend_name(x.category)) + " (" + std::to_string(x.ops) + " ops start here)");
  }
  os << "</g>\n";

  if (r.step_time_us > 0 && std::isfinite(r.step_time_us))
    os << "<line class=\"step\" x1=\"" << px(x_of(r.step_time_us)) << "\" y1=\""
       << px(lanes_top - 6) << "\" x2=\"" << px(x_of(r.step_time_us)) << "\" y2=\""
       << px(rows_bottom) << "\" stroke=\"#c00000\" stroke-dasharray=\"4 3\"/>\n";
  os << "</svg>\n";
}

}  // namespace overlap::trace
