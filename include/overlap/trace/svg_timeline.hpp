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
  int width = 1200;     ///< the whole picture, row labels included; the time axis gets at least
                        ///< 100 pixels however small this is
  int row_height = 18;  ///< one (rank, stream) row; labels are 11 pixels high, so keep it >= 12
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
        if (static_cast<unsigned char>(c) < 0x20)
          os << "&#xFFFD;";
        else
          os << c;
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
inline std::string_view legend_name(category c) { return c == category::none ? "other" : category_name(c); }

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
    if (!out.empty() && s.begin <= out.back().end + gap)
      out.back().end = std::max(out.back().end, s.end);
    else
      out.push_back(s);
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

/// One interval as the picture draws it: a bar on its row, coloured by its category.
struct svg_bar {
  std::size_t row;
  double start_us;
  double end_us;
  detail::category category;
  std::string label;
};

/// Bins of one row in a row led by one category: what a picture too fine for `max_bars` draws
/// as one bar, its tooltip counting the ops that start in it.
struct svg_bin_run {
  std::size_t row;
  detail::category category;
  double start_us, end_us;
  std::size_t ops;
};

/// The memory lane: the rank whose buffers take the most at once, and its memory over the step.
struct svg_memory_lane {
  int rank = 0;
  std::int64_t peak = 0;
  std::vector<sim::memory_point> curve;
};

/// The picture of one simulated step, in two halves: the constructor lays it out (its rows,
/// bars, exposed spans and memory lane, then the geometry they need), `write` draws it part by
/// part, back to front. The drawing consumes the layout: one picture per writer.
class svg_writer {
 public:
  svg_writer(std::ostream& os, const std::vector<schedule::program>& programs, const sim::result& r,
             const svg_options& options, const schedule::rank_classes* classes)
      : os_(os), r_(r), options_(options), classes_(classes), sizes_(classes ? classes->sizes() : std::vector<int>{}) {
    label_rows(programs);
    find_exposed(collect_bars(programs));
    if (options_.summary_lanes) pick_memory_lane(programs);
    lay_out();
  }

  /// The whole picture: header and legend, axis, summary lanes, rows, bars, the step line.
  void write() && {
    write_header();
    write_title();
    write_legend();
    write_axis();
    write_exposed_lanes();
    write_memory_lane();
    write_rows();
    write_ops();
    write_footer();
  }

 private:
  /// Above the summary lanes: the title, the legend and the tick labels.
  static constexpr double lanes_top = 60;
  static constexpr double right_margin = 24;  // half of the last tick's label

  /// A rank's name in its rows and in the memory lane's label.
  std::string rank_name(int rank) const {
    return options_.rank_name ? options_.rank_name(rank) : rank_label(rank, classes_ ? &sizes_ : nullptr);
  }

  /// A row per stream of every program, and one per (rank, stream) that only the intervals name;
  /// rows are numbered in (rank, stream) order.
  void label_rows(const std::vector<schedule::program>& programs) {
    for (const auto& p : programs) {
      const auto names = stream_names(p);
      for (std::size_t s = 0; s < names.size(); ++s)
        row_labels_[{p.rank, static_cast<int>(s)}] = rank_name(p.rank) + " " + names[s];
    }
    for (const auto& iv : r_.intervals)
      row_labels_.try_emplace({iv.rank, iv.stream}, rank_name(iv.rank) + " stream " + std::to_string(iv.stream));
    for (const auto& [key, label] : row_labels_) row_of_.emplace(key, row_of_.size());
  }

  /// Per rank, its compute and each family's communication, for the exposed-communication lanes.
  using rank_spans = std::map<int, std::array<std::vector<span>, num_categories>>;

  /// A bar per interval that lasts a nanosecond or more (with finite times), the categories they
  /// show and the time the axis spans; returns each rank's spans when the summary lanes are drawn.
  rank_spans collect_bars(const std::vector<schedule::program>& programs) {
    const auto ranks_programs = by_rank(programs);
    rank_spans spans_of_rank;
    span_us_ = std::isfinite(r_.step_time_us) ? std::max(r_.step_time_us, 0.0) : 0.0;
    for (const auto& iv : r_.intervals) {
      if (!has_finite_times(iv) || to_ns(iv.end_us) <= to_ns(iv.start_us)) continue;
      const located at = locate(ranks_programs, iv);
      const auto c = at.op ? category_of(*at.op) : category::none;
      used_[static_cast<std::size_t>(c)] = true;
      span_us_ = std::max(span_us_, iv.end_us);
      bars_.push_back({row_of_.at({iv.rank, iv.stream}), iv.start_us, iv.end_us, c, interval_label(at, iv)});
      if (options_.summary_lanes)
        spans_of_rank[iv.rank][static_cast<std::size_t>(c)].push_back({iv.start_us, iv.end_us});
    }
    if (span_us_ <= 0) span_us_ = 1;
    return spans_of_rank;
  }

  /// Exposed: a family's communication with no compute of its rank beside it, on any rank. The
  /// families with exposed time get a lane each, in category order.
  void find_exposed(rank_spans spans_of_rank) {
    for (auto& [rank, spans] : spans_of_rank) {
      const std::vector<span> compute = merged(std::move(spans[0]));
      for (std::size_t c = 1; c < num_categories; ++c)
        for (const span& e : minus(merged(std::move(spans[c])), compute)) exposed_[c].push_back(e);
    }
    for (std::size_t c = 1; c < num_categories; ++c)
      if (!exposed_[c].empty()) lanes_.push_back(c);
  }

  /// The memory lane: the program whose buffers take the most at once (skipped where the memory
  /// analysis refuses a program's sizes or intervals).
  void pick_memory_lane(const std::vector<schedule::program>& programs) {
    for (const auto& p : programs) {
      try {
        std::vector<sim::memory_point> curve = sim::memory_curve(p, r_.intervals);
        std::int64_t peak = 0;
        for (const sim::memory_point& point : curve) peak = std::max(peak, point.bytes);
        if (peak > 0 && (!memory_ || peak > memory_->peak)) memory_ = svg_memory_lane{p.rank, peak, std::move(curve)};
      } catch (const std::invalid_argument&) {}
    }
  }

  /// Where each part goes: the label column as wide as the longest row label, then the plot; from
  /// the top the summary lanes, the memory lane and the rows.
  void lay_out() {
    std::size_t longest_label = 0;
    for (const auto& [key, label] : row_labels_) longest_label = std::max(longest_label, label.size());
    // About 6.5 pixels per character of 11-pixel sans-serif, plus the margins on both sides.
    plot_left_ = std::max(60.0, 16 + 6.5 * static_cast<double>(longest_label));
    plot_width_ = std::max(100.0, options_.width - plot_left_ - right_margin);
    width_ = plot_left_ + plot_width_ + right_margin;
    row_height_ = std::max(options_.row_height, 2);
    memory_height_ = memory_ ? 2 * row_height_ : 0;
    memory_top_ = lanes_top + static_cast<double>(lanes_.size()) * row_height_;
    rows_top_ = memory_top_ + memory_height_ + (lanes_.empty() && !memory_ ? 0 : 6);
    rows_bottom_ = rows_top_ + static_cast<double>(row_labels_.size()) * row_height_;
    height_ = rows_bottom_ + 8;
    pixel_us_ = span_us_ / plot_width_;
  }

  double x_of(double us) const { return plot_left_ + us / span_us_ * plot_width_; }
  /// The plot's pixel columns, which the summary lanes are drawn one at a time over.
  std::size_t pixels() const { return static_cast<std::size_t>(std::ceil(plot_width_)) + 1; }
  double bar_height() const { return std::max(row_height_ - 4, 1.0); }

  /// The <svg> element and its white background.
  void write_header() {
    os_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(width_) << "\" height=\"" << px(height_)
        << "\" viewBox=\"0 0 " << px(width_) << ' ' << px(height_)
        << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    os_ << "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" << px(width_) << "\" height=\"" << px(height_)
        << "\" fill=\"#ffffff\"/>\n";
  }

  /// The step time in bold, and after it, in red, that the step deadlocked.
  void write_title() {
    const std::string step_text = std::isfinite(r_.step_time_us)
                                      ? "step time " + time_text(r_.step_time_us, r_.step_time_us >= 1000)
                                      : std::string{};
    if (!step_text.empty()) {
      os_ << "<text x=\"8\" y=\"16\" font-size=\"13\" font-weight=\"bold\">";
      write_xml_text(os_, step_text);
      os_ << "</text>\n";
    }
    // After the step time, at about 8 pixels per character of 13-pixel bold text.
    if (r_.deadlock)
      os_ << "<text x=\"" << px(24 + 8 * static_cast<double>(step_text.size()))
          << "\" y=\"16\" font-size=\"13\" fill=\"#c00000\">"
          << "deadlock: the step did not finish (see the wait-for graph)</text>\n";
  }

  /// A swatch and a name for each category that some bar shows.
  void write_legend() {
    double legend_x = 8;
    for (std::size_t c = 0; c < num_categories; ++c) {
      if (!used_[c]) continue;
      const auto name = legend_name(static_cast<category>(c));
      os_ << "<rect class=\"legend\" x=\"" << px(legend_x) << "\" y=\"25\" width=\"10\" height=\"10\" "
          << "fill=\"" << category_colours[c] << "\"/><text x=\"" << px(legend_x + 14) << "\" y=\"34\">" << name
          << "</text>\n";
      legend_x += 14 + 6.5 * static_cast<double>(name.size()) + 16;
    }
  }

  /// Grid lines at round times across lanes and rows, and their times above the lanes.
  void write_axis() {
    // Ticks are counted, not accumulated, so that rounding cannot add or drop the last one.
    const double step = tick_step(span_us_);
    const auto ticks = static_cast<int>(std::floor(span_us_ / step * (1 + 1e-9)));
    const bool in_ms = span_us_ >= 1000;
    os_ << "<g class=\"axis\" stroke=\"#e0e0e0\">\n";
    for (int k = 0; k <= ticks; ++k)
      os_ << "<line x1=\"" << px(x_of(k * step)) << "\" y1=\"" << px(lanes_top - 6) << "\" x2=\"" << px(x_of(k * step))
          << "\" y2=\"" << px(rows_bottom_) << "\"/>\n";
    os_ << "</g>\n<g class=\"ticks\" font-size=\"10\" text-anchor=\"middle\" fill=\"#404040\">\n";
    for (int k = 0; k <= ticks; ++k) {
      os_ << "<text x=\"" << px(x_of(k * step)) << "\" y=\"" << px(lanes_top - 10) << "\">";
      write_xml_text(os_, time_text(k * step, in_ms));
      os_ << "</text>\n";
    }
    os_ << "</g>\n";
  }

  /// The exposed-communication lanes, one per family with exposed time.
  void write_exposed_lanes() {
    if (lanes_.empty()) return;
    os_ << "<g class=\"summary\">\n";
    for (std::size_t i = 0; i < lanes_.size(); ++i) write_exposed_lane(i);
    os_ << "</g>\n";
  }

  /// Per pixel, the share of its time that some rank's communication of category `c` is exposed
  /// (0..1, more where ranks' exposed spans overlap). Consumes the category's spans.
  std::vector<double> exposed_share(std::size_t c) {
    std::vector<double> share(pixels(), 0);
    for (const span& e : merged(std::move(exposed_[c])))
      for (auto k = static_cast<std::size_t>(e.begin / pixel_us_); k < share.size() && k * pixel_us_ < e.end; ++k)
        share[k] += (std::min(e.end, (k + 1) * pixel_us_) - std::max(e.begin, k * pixel_us_)) / pixel_us_;
    return share;
  }

  /// Lane `i`, a pixel at a time: the exposed share of each pixel sets its opacity, in tenths (runs
  /// of one level are one rect).
  void write_exposed_lane(std::size_t i) {
    const std::size_t c = lanes_[i];
    const double y = lanes_top + static_cast<double>(i) * row_height_;
    os_ << "<text x=\"8\" y=\"" << px(y + row_height_ / 2 + 4) << "\">exposed ";
    write_xml_text(os_, legend_name(static_cast<category>(c)));
    os_ << " (any rank)</text>\n";
    const std::vector<double> share = exposed_share(c);
    for (std::size_t k = 0; k < share.size();) {
      const int level = static_cast<int>(std::ceil(std::min(share[k], 1.0) * 10));  // 0..10
      std::size_t j = k + 1;
      while (j < share.size() && static_cast<int>(std::ceil(std::min(share[j], 1.0) * 10)) == level) ++j;
      if (level > 0)
        os_ << "<rect class=\"exposed\" x=\"" << px(x_of(k * pixel_us_)) << "\" y=\"" << px(y + 2) << "\" width=\""
            << px(x_of(std::min(j * pixel_us_, span_us_)) - x_of(k * pixel_us_)) << "\" height=\"" << px(bar_height())
            << "\" fill=\"" << category_colours[c] << "\" fill-opacity=\"" << px(level / 10.0) << "\"/>\n";
      k = j;
    }
  }

  /// Per pixel, the most the memory lane's rank holds within its time.
  std::vector<std::int64_t> memory_per_pixel() const {
    std::vector<std::int64_t> most(pixels(), 0);
    const std::vector<sim::memory_point>& c = memory_->curve;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const double end = i + 1 < c.size() ? c[i + 1].at_us : span_us_;
      auto k = static_cast<std::size_t>(std::clamp(c[i].at_us, 0.0, span_us_) / pixel_us_);
      do {
        if (k < most.size()) most[k] = std::max(most[k], c[i].bytes);
        ++k;
      } while (k < most.size() && static_cast<double>(k) * pixel_us_ < end);
    }
    return most;
  }

  /// The memory lane: its label with the rank's peak, and the memory per pixel as one polygon,
  /// scaled to the peak.
  void write_memory_lane() {
    if (!memory_) return;
    os_ << "<g class=\"memory\">\n<text x=\"8\" y=\"" << px(memory_top_ + memory_height_ / 2 + 4) << "\">";
    write_xml_text(os_, "memory of " + rank_name(memory_->rank) + ", peak " +
                            px(static_cast<double>(memory_->peak) / 1e9) + " GB");
    os_ << "</text>\n";
    const std::vector<std::int64_t> most = memory_per_pixel();
    const double bottom = memory_top_ + memory_height_ - 2;
    const double scale = (memory_height_ - 4) / static_cast<double>(memory_->peak);
    os_ << "<polygon class=\"memory\" fill=\"#9c9c9c\" fill-opacity=\"0.7\" points=\"" << px(x_of(0)) << ','
        << px(bottom);
    for (std::size_t k = 0; k < most.size(); ++k) {
      const double y = bottom - static_cast<double>(most[k]) * scale;
      os_ << ' ' << px(x_of(std::min(static_cast<double>(k) * pixel_us_, span_us_))) << ',' << px(y) << ' '
          << px(x_of(std::min(static_cast<double>(k + 1) * pixel_us_, span_us_))) << ',' << px(y);
    }
    os_ << ' ' << px(x_of(span_us_)) << ',' << px(bottom) << "\"/>\n</g>\n";
  }

  /// A line above each row and its label.
  void write_rows() {
    os_ << "<g class=\"rows\">\n";
    std::optional<int> previous_rank;
    for (const auto& [key, label] : row_labels_) {
      const double y = rows_top_ + static_cast<double>(row_of_.at(key)) * row_height_;
      // A darker line where a rank starts groups each rank's streams.
      const bool new_rank = previous_rank != key.first;
      previous_rank = key.first;
      os_ << "<line x1=\"0\" y1=\"" << px(y) << "\" x2=\"" << px(width_) << "\" y2=\"" << px(y) << "\" stroke=\""
          << (new_rank ? "#a0a0a0" : "#e8e8e8") << "\"/><text x=\"8\" y=\"" << px(y + row_height_ / 2 + 4) << "\">";
      write_xml_text(os_, label);
      os_ << "</text>\n";
    }
    os_ << "</g>\n";
  }

  /// The bars. Sub-pixel bars of one row and category within half a pixel of each other merge:
  /// one rect, its tooltip counting the ops (at most a bar per pixel per category and row). When
  /// that still leaves more than `max_bars`, each row is drawn at a coarser resolution instead
  /// (`write_binned_bars`), so that the picture is bounded by its pixels, not by the ops.
  void write_ops() {
    // A thin white outline separates back-to-back ops of one stream, which would read as one bar.
    os_ << "<g class=\"ops\" stroke=\"#ffffff\" stroke-width=\"0.5\">\n";
    std::stable_sort(bars_.begin(), bars_.end(), [](const svg_bar& a, const svg_bar& b) {
      return std::tie(a.row, a.category, a.start_us) < std::tie(b.row, b.category, b.start_us);
    });
    if (merged_runs() <= options_.max_bars)
      write_merged_bars();
    else
      write_binned_bars();
    os_ << "</g>\n";
  }

  /// The run of sorted bars from bar `i`: one past its last bar, and when it ends. A bar a pixel or
  /// wider is a run alone; narrower bars of its row and category that start within half a pixel of
  /// the run's end join it.
  std::pair<std::size_t, double> run_from(std::size_t i) const {
    double end_us = bars_[i].end_us;
    std::size_t j = i + 1;
    if (bars_[i].end_us - bars_[i].start_us >= pixel_us_) return {j, end_us};
    for (; j < bars_.size() && bars_[j].row == bars_[i].row && bars_[j].category == bars_[i].category &&
           bars_[j].start_us <= end_us + pixel_us_ / 2 && bars_[j].end_us - bars_[j].start_us < pixel_us_;
         ++j)
      end_us = std::max(end_us, bars_[j].end_us);
    return {j, end_us};
  }

  /// How many rects the merged bars take.
  std::size_t merged_runs() const {
    std::size_t runs = 0;
    for (std::size_t i = 0; i < bars_.size(); ++runs) i = run_from(i).first;
    return runs;
  }

  /// One rect on `row`, its tooltip `head`, the category and the times.
  void draw_bar(std::size_t row, category c, double start_us, double end_us, const std::string& head) {
    const std::string us = " " + std::string(micro) + "s";
    const double x = x_of(start_us);
    const double y = rows_top_ + static_cast<double>(row) * row_height_ + (row_height_ - bar_height()) / 2;
    os_ << "<rect class=\"op\" x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\""
        << px(std::max(x_of(end_us) - x, 0.5)) << "\" height=\"" << px(bar_height()) << "\" fill=\""
        << category_colours[static_cast<std::size_t>(c)] << "\"><title>";
    const std::int64_t start = to_ns(start_us), end = to_ns(end_us);
    write_xml_text(os_, head + "\n" + std::string(category_name(c)) + ", " + us_text(start) + " - " + us_text(end) +
                            us + " (" + us_text(end - start) + us + ")");
    os_ << "</title></rect>\n";
  }

  /// A rect per run of merged bars, named by its op or by how many ops it merges.
  void write_merged_bars() {
    for (std::size_t i = 0; i < bars_.size();) {
      const auto [j, end_us] = run_from(i);
      draw_bar(bars_[i].row, bars_[i].category, bars_[i].start_us, end_us,
               j - i == 1 ? bars_[i].label : std::to_string(j - i) + " ops from " + bars_[i].label);
      i = j;
    }
  }

  /// Every row at bins of `bin_us`: a bin shows the category busy longest in it, and bins of one
  /// category in a row are one run.
  std::vector<svg_bin_run> binned_runs(const std::vector<std::vector<const svg_bar*>>& of_row, double bin_us) const {
    std::vector<svg_bin_run> out;
    const auto bins = static_cast<std::size_t>(std::ceil(span_us_ / bin_us)) + 1;
    for (std::size_t row = 0; row < of_row.size(); ++row) {
      std::vector<std::array<double, num_categories>> busy(bins);
      std::vector<std::size_t> starts(bins, 0);
      for (const svg_bar* b : of_row[row]) {
        const auto first = static_cast<std::size_t>(b->start_us / bin_us);
        const auto last = static_cast<std::size_t>(b->end_us / bin_us);
        ++starts[std::min(first, bins - 1)];
        for (std::size_t k = first; k <= last && k < bins; ++k)
          busy[k][static_cast<std::size_t>(b->category)] +=
              std::min(b->end_us, (k + 1) * bin_us) - std::max(b->start_us, k * bin_us);
      }
      for (std::size_t k = 0; k < bins; ++k) {
        const auto lead = std::max_element(busy[k].begin(), busy[k].end());
        if (*lead <= 0) continue;
        const auto c = static_cast<category>(lead - busy[k].begin());
        if (!out.empty() && out.back().row == row && out.back().category == c && out.back().end_us >= k * bin_us) {
          out.back().end_us = std::min((k + 1) * bin_us, span_us_);
          out.back().ops += starts[k];
        } else {
          out.push_back({row, c, k * bin_us, std::min((k + 1) * bin_us, span_us_), starts[k]});
        }
      }
    }
    return out;
  }

  /// The bars at the finest resolution that fits `max_bars`: bins of 1, 2, 4, ... pixels.
  void write_binned_bars() {
    std::vector<std::vector<const svg_bar*>> of_row(row_labels_.size());
    for (const svg_bar& b : bars_) of_row[b.row].push_back(&b);
    std::vector<svg_bin_run> drawn;
    for (double bin_us = pixel_us_;; bin_us *= 2) {
      drawn = binned_runs(of_row, bin_us);
      if (drawn.size() <= options_.max_bars || bin_us >= span_us_) break;
    }
    for (const svg_bin_run& x : drawn)
      draw_bar(x.row, x.category, x.start_us, x.end_us,
               "mostly " + std::string(legend_name(x.category)) + " (" + std::to_string(x.ops) + " ops start here)");
  }

  /// The dashed line at the step time, and the end of the picture.
  void write_footer() {
    if (r_.step_time_us > 0 && std::isfinite(r_.step_time_us))
      os_ << "<line class=\"step\" x1=\"" << px(x_of(r_.step_time_us)) << "\" y1=\"" << px(lanes_top - 6) << "\" x2=\""
          << px(x_of(r_.step_time_us)) << "\" y2=\"" << px(rows_bottom_)
          << "\" stroke=\"#c00000\" stroke-dasharray=\"4 3\"/>\n";
    os_ << "</svg>\n";
  }

  std::ostream& os_;
  const sim::result& r_;
  const svg_options& options_;
  const schedule::rank_classes* classes_;
  std::vector<int> sizes_;                                 ///< the classes' sizes, for the rank names
  std::map<std::pair<int, int>, std::string> row_labels_;  ///< (rank, stream) -> its label
  std::map<std::pair<int, int>, std::size_t> row_of_;      ///< (rank, stream) -> its row
  std::vector<svg_bar> bars_;
  std::array<bool, num_categories> used_{};  ///< the categories some bar shows
  double span_us_ = 0;                       ///< the time the axis spans
  std::array<std::vector<span>, num_categories> exposed_;
  std::vector<std::size_t> lanes_;  ///< the categories with exposed time, in category order
  std::optional<svg_memory_lane> memory_;
  double plot_left_ = 0, plot_width_ = 0, width_ = 0, height_ = 0, row_height_ = 0;
  double memory_height_ = 0, memory_top_ = 0, rows_top_ = 0, rows_bottom_ = 0;
  double pixel_us_ = 0;  ///< the time one pixel of the plot spans
};

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
inline void write_svg_timeline(std::ostream& os, const std::vector<schedule::program>& programs, const sim::result& r,
                               const svg_options& options = {}, const schedule::rank_classes* classes = nullptr) {
  detail::svg_writer(os, programs, r, options, classes).write();
}

}  // namespace overlap::trace
