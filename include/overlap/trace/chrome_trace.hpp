#pragma once
/// @file
/// The Chrome trace writer: a simulated step as Trace Event Format JSON, which chrome://tracing and
/// ui.perfetto.dev open as they are. Each rank is a process (pid = global rank), each stream a
/// thread of it (tid = stream index, named by its role), each op that took time a complete event.
/// Ops of zero length (event record and wait) become thread-scoped instant events, so that the
/// points where streams synchronise stay visible next to the kernels they order.

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <overlap/program/program.hpp>
#include <overlap/program/rank_classes.hpp>
#include <overlap/sim/analysis/memory.hpp>
#include <overlap/sim/result.hpp>

namespace overlap::trace {

namespace detail {

/// What a trace groups an op under. Kernels are "compute" whatever family they serve, because
/// viewers colour by category and a reader must tell compute from communication at a glance;
/// everything else is its family ("none" for events and unattributed communication).
/// compute, then the families in their order (so a family's category has its family's number),
/// then none.
enum class category : std::uint8_t {
  compute,
#define OVERLAP_CATEGORY(name) name,
  OVERLAP_FAMILIES(OVERLAP_CATEGORY)
#undef OVERLAP_CATEGORY
      none
};
inline constexpr std::size_t num_categories = schedule::family_count + 1;

inline category category_of(const schedule::op& o) {
  if (o.kind == schedule::op_kind::compute) return category::compute;
  const schedule::family f = o.family();
  return f == schedule::family::none ? category::none : static_cast<category>(f);
}

inline std::string_view category_name(category c) {
  if (c == category::compute) return "compute";
  if (c == category::none) return "none";
  return schedule::to_string(static_cast<schedule::family>(c));
}

/// The communicator an op names, or null (compute and event ops, or an index out of range).
inline const schedule::communicator* comm_of(const schedule::program& p, const schedule::op& o) {
  if (o.comm < 0 || static_cast<std::size_t>(o.comm) >= p.comms.size()) return nullptr;
  return &p.comms[static_cast<std::size_t>(o.comm)];
}

/// What a viewer calls an op: its key's display name, with the event of a record or wait
/// ("event_record e3"); for an untyped op its kind and operands ("all_gather tp", "send pp-next").
inline std::string op_label(const schedule::program& p, const schedule::op& o) {
  if (o.kind == schedule::op_kind::record || o.kind == schedule::op_kind::wait)
    return schedule::display_name(o) + " e" + std::to_string(o.event);
  if (o.key.type != schedule::op_type::none) return schedule::display_name(o);
  const schedule::communicator* comm = comm_of(p, o);
  const std::string on = comm ? " " + comm->name : std::string{};
  switch (o.kind) {
    case schedule::op_kind::record:
    case schedule::op_kind::wait: return std::string(schedule::to_string(o.kind)) + " e" + std::to_string(o.event);
    case schedule::op_kind::collective: return std::string(schedule::to_string(o.coll)) + on;
    case schedule::op_kind::send:
    case schedule::op_kind::recv: return std::string(schedule::to_string(o.kind)) + on;
    case schedule::op_kind::compute:
    case schedule::op_kind::host_sync: break;
  }
  return std::string(schedule::to_string(o.kind));
}

/// The name of each stream of `p`: its role, with the stream index added where several streams
/// share that role (two tp_comm streams must not read as one).
inline std::vector<std::string> stream_names(const schedule::program& p) {
  std::map<schedule::stream_role, int> count;
  for (const auto& s : p.streams) ++count[s.role];
  std::vector<std::string> names;
  for (std::size_t i = 0; i < p.streams.size(); ++i) {
    std::string name(schedule::to_string(p.streams[i].role));
    if (count[p.streams[i].role] > 1) name += " (stream " + std::to_string(i) + ")";
    names.push_back(std::move(name));
  }
  return names;
}

/// The programs by global rank, to find the op behind each interval.
inline std::map<int, const schedule::program*> by_rank(const std::vector<schedule::program>& programs) {
  std::map<int, const schedule::program*> out;
  for (const auto& p : programs) out[p.rank] = &p;
  return out;
}

/// The program and op an interval ran, or nulls when the programs do not have them.
struct located {
  const schedule::program* program = nullptr;
  const schedule::op* op = nullptr;
};

inline located locate(const std::map<int, const schedule::program*>& programs, const sim::interval& iv) {
  const auto it = programs.find(iv.rank);
  if (it == programs.end()) return {};
  const schedule::program& p = *it->second;
  if (iv.op < 0 || static_cast<std::size_t>(iv.op) >= p.ops.size()) return {&p, nullptr};
  return {&p, &p.ops[static_cast<std::size_t>(iv.op)]};
}

/// The interval's label, "op N" when the programs do not have its op.
inline std::string interval_label(const located& at, const sim::interval& iv) {
  return at.op ? op_label(*at.program, *at.op) : "op " + std::to_string(iv.op);
}

/// Microseconds rounded to whole nanoseconds. Both ends of every interval are rounded to this one
/// grid, so an op that starts where the previous one on its stream ended still does after
/// rounding; viewers reject slices on one thread that overlap by a rounding error.
inline std::int64_t to_ns(double us) { return std::llround(us * 1000.0); }

/// Nanoseconds as decimal microseconds, with no trailing zeros: 12345 -> "12.345", 3000 -> "3".
inline std::string us_text(std::int64_t ns) {
  std::string out = ns < 0 ? "-" : "";
  const std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  out += std::to_string(magnitude / 1000);
  if (std::uint64_t frac = magnitude % 1000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 3 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    out += '.' + digits;
  }
  return out;
}

/// Whether an interval has times a writer can place; a simulator bug must not corrupt the file.
inline bool has_finite_times(const sim::interval& iv) { return std::isfinite(iv.start_us) && std::isfinite(iv.end_us); }

inline void write_json_string(std::ostream& os, std::string_view s) {
  constexpr std::string_view hex = "0123456789abcdef";
  os << '"';
  for (const char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\b': os << "\\b"; break;
      case '\f': os << "\\f"; break;
      case '\n': os << "\\n"; break;
      case '\r': os << "\\r"; break;
      case '\t': os << "\\t"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20)
          os << "\\u00" << hex[u >> 4] << hex[u & 0xf];
        else
          os << c;
      }
    }
  }
  os << '"';
}

/// A number in its shortest round-trip form, independent of the stream's locale; `null` for
/// NaN and infinity, which JSON cannot spell.
template <class T>
void write_json_number(std::ostream& os, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) {
      os << "null";
      return;
    }
  }
  char buf[32];
  const auto written = std::to_chars(buf, buf + sizeof buf, v);
  os.write(buf, written.ptr - buf);
}

/// The members of one JSON object: places the commas between them.
class json_members {
 public:
  explicit json_members(std::ostream& os) : os_(os) {}

  /// Starts the member `name`; its value is written to the returned stream.
  std::ostream& key(std::string_view name) {
    if (!first_) os_ << ',';
    first_ = false;
    write_json_string(os_, name);
    return os_ << ':';
  }
  void string(std::string_view name, std::string_view value) { write_json_string(key(name), value); }
  template <class T>
  void number(std::string_view name, T value) {
    write_json_number(key(name), value);
  }
  void raw(std::string_view name, std::string_view json) { key(name) << json; }

 private:
  std::ostream& os_;
  bool first_ = true;
};

/// What a reader of a trace wants to know about an op beyond its name and times.
inline void write_op_args(std::ostream& os, const located& at, const sim::interval& iv) {
  os << '{';
  json_members m(os);
  m.number("op", iv.op);
  if (at.op) {
    const schedule::op& o = *at.op;
    m.string("kind", schedule::to_string(o.kind));
    if (o.family() != schedule::family::none) m.string("family", schedule::to_string(o.family()));
    if (o.kind == schedule::op_kind::collective) m.string("collective", schedule::to_string(o.coll));
    if (const schedule::communicator* comm = comm_of(*at.program, o)) m.string("comm", comm->name);
    if (o.kind == schedule::op_kind::send || o.kind == schedule::op_kind::recv) m.number("peer", o.peer);
    if (o.kind == schedule::op_kind::collective && o.seq >= 0) m.number("seq", o.seq);
    if (o.kind == schedule::op_kind::record || o.kind == schedule::op_kind::wait) m.number("event", o.event);
    if (o.bytes != 0) m.number("bytes", o.bytes);
    if (o.flops != 0) m.number("flops", o.flops);
    if (o.memory_bytes != 0) m.number("memory_bytes", o.memory_bytes);
  }
  os << '}';
}

/// The events of the `traceEvents` array: places the separators between them.
class event_list {
 public:
  explicit event_list(std::ostream& os) : os_(os) {}

  /// Opens the next event; its members go through the returned writer, the caller writes '}'.
  json_members open() {
    os_ << (first_ ? "{" : ",\n{");
    first_ = false;
    return json_members(os_);
  }

 private:
  std::ostream& os_;
  bool first_ = true;
};

/// "rank R", and with classes "rank R (class of N)": a representative and the ranks it stands for.
inline std::string rank_label(int rank, const std::vector<int>* class_sizes) {
  std::string text = "rank " + std::to_string(rank);
  if (class_sizes && rank >= 0 && static_cast<std::size_t>(rank) < class_sizes->size())
    text += " (class of " + std::to_string((*class_sizes)[static_cast<std::size_t>(rank)]) + ")";
  return text;
}

/// Metadata events naming a process (no `tid`) or a thread, and giving its sort index: without
/// one, chrome://tracing orders processes by name, and "rank 10" would come before "rank 2".
inline void write_metadata(std::ostream& os, event_list& events, std::string_view what, int pid, std::optional<int> tid,
                           std::string_view name, int sort_index) {
  for (const bool sort : {false, true}) {
    json_members m = events.open();
    m.string("name", std::string(what) + (sort ? "_sort_index" : "_name"));
    m.string("ph", "M");
    m.number("pid", pid);
    if (tid) m.number("tid", *tid);
    os << ",\"args\":{";
    json_members args(os);
    if (sort)
      args.number("sort_index", sort_index);
    else
      args.string("name", name);
    os << "}}";
  }
}

}  // namespace detail

/// Writes `r`, the simulation of `programs`, as Chrome-trace JSON (open it in ui.perfetto.dev or
/// chrome://tracing). Layout: `{"traceEvents":[...], "displayTimeUnit":"ms", "otherData":{...}}`.
/// - one process per rank, `pid` = global rank, named "rank N"; one thread per stream, `tid` =
///   stream index, named by the stream's role (with "(stream i)" where two streams share a role);
/// - one `"ph":"X"` event per interval of at least a nanosecond, `name` = the op's name (for unnamed ops its kind and
///   operands, e.g. "record e3"), `cat` = "compute" for kernels, else the op's family ("tp",
///   "dp", "pp", "ep", "none"), `ts`/`dur` in microseconds on a whole-nanosecond grid, and
///   `args` with the op index, kind, family, communicator and non-zero bytes/flops;
/// - intervals shorter than a nanosecond (event record/wait) as `"ph":"i"` thread-scoped instants;
/// - per program, its memory over the step (sim::memory_curve) as `"ph":"C"` counter events named
///   "memory" with `args` {"GB": bytes / 1e9} (left out for a program whose sizes or intervals
///   the memory analysis refuses);
/// - `otherData`: step time, compute and per-family (exposed) communication time, deadlock and
///   its wait-for graph.
/// `displayTimeUnit` is "ms" because the format defines only "ms" and "ns" there (chrome://tracing
/// refuses to load a file with any other unit); timestamps in this format are microseconds
/// whatever it says.
/// Intervals of ranks or ops missing from `programs` are still written, named "op N"; intervals
/// with non-finite times are left out, as no viewer could place them.
/// With `classes` (the step simulated once per class: `programs` are the representatives), each
/// process is named "rank N (class of M)", M the ranks it stands for.
inline void write_chrome_trace(std::ostream& os, const std::vector<schedule::program>& programs, const sim::result& r,
                               const schedule::rank_classes* classes = nullptr) {
  const std::vector<int> sizes = classes ? classes->sizes() : std::vector<int>{};
  const auto ranks_programs = detail::by_rank(programs);
  std::set<int> ranks;
  for (const auto& p : programs) ranks.insert(p.rank);
  for (const auto& iv : r.intervals) ranks.insert(iv.rank);

  os << "{\"traceEvents\":[\n";
  detail::event_list events(os);
  for (const int rank : ranks)
    detail::write_metadata(os, events, "process", rank, std::nullopt,
                           detail::rank_label(rank, classes ? &sizes : nullptr), rank);
  for (const auto& p : programs) {
    const auto names = detail::stream_names(p);
    for (std::size_t s = 0; s < names.size(); ++s)
      detail::write_metadata(os, events, "thread", p.rank, static_cast<int>(s), names[s], static_cast<int>(s));
  }
  for (const auto& iv : r.intervals) {
    if (!detail::has_finite_times(iv)) continue;
    const detail::located at = detail::locate(ranks_programs, iv);
    const std::int64_t start = detail::to_ns(iv.start_us);
    const std::int64_t duration = detail::to_ns(iv.end_us) - start;
    detail::json_members m = events.open();
    m.string("name", detail::interval_label(at, iv));
    m.string("cat", detail::category_name(at.op ? detail::category_of(*at.op) : detail::category::none));
    if (duration > 0) {
      m.string("ph", "X");
    } else {
      m.string("ph", "i");
      m.string("s", "t");
    }
    m.number("pid", iv.rank);
    m.number("tid", iv.stream);
    m.raw("ts", detail::us_text(start));
    if (duration > 0) m.raw("dur", detail::us_text(duration));
    detail::write_op_args(m.key("args"), at, iv);
    os << '}';
  }
  for (const auto& p : programs) {
    std::vector<sim::memory_point> curve;
    try {
      curve = sim::memory_curve(p, r.intervals);
    } catch (const std::invalid_argument&) {
      continue;
    }
    for (const sim::memory_point& point : curve) {
      detail::json_members m = events.open();
      m.string("name", "memory");
      m.string("ph", "C");
      m.number("pid", p.rank);
      m.raw("ts", detail::us_text(detail::to_ns(point.at_us)));
      m.key("args") << '{';
      detail::json_members args(os);
      args.number("GB", static_cast<double>(point.bytes) / 1e9);
      os << "}}";
    }
  }
  os << "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{";
  detail::json_members other(os);
  other.number("step_time_us", r.step_time_us);
  other.number("compute_us", r.compute_us);
  for (std::size_t f = 1; f < r.comm_us.size(); ++f) {
    const std::string family(schedule::to_string(static_cast<schedule::family>(f)));
    other.number("comm_us." + family, r.comm_us[f]);
    other.number("exposed_comm_us." + family, r.exposed_comm_us[f]);
  }
  other.raw("deadlock", r.deadlock ? "true" : "false");
  if (r.deadlock) other.string("wait_for_graph", r.wait_for_graph);
  os << "}}\n";
}

}  // namespace overlap::trace
