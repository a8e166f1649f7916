// The timeline writers on a small hand-made two-rank step and simulation result: the Chrome trace
// is strict JSON with the events a viewer shows, the SVG is well-formed XML with one bar per op
// that took time. Both outputs are read back by strict parsers, never by searching the text alone:
// the trace by nlohmann/json with repeated keys refused, the SVG by the small XML reader below
// (both tested on malformed input).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <overlap/trace/chrome_trace.hpp>
#include <overlap/trace/svg_timeline.hpp>

namespace sc = overlap::schedule;
namespace sim = overlap::sim;
namespace tr = overlap::trace;
using nlohmann::json;

namespace {

// ---- JSON: nlohmann's parser, which refuses what a viewer's JSON.parse refuses (RFC 8259). ----

/// Parses `text`, refusing repeated keys too: nlohmann keeps the last of them silently, which would
/// hide a writer that emits a field twice. Throws json::parse_error, or std::runtime_error on a
/// repeated key.
json strict_parse(std::string_view text) {
  std::vector<std::set<std::string>> keys;  // of each object being read, innermost last
  return json::parse(text, [&keys](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw std::runtime_error("JSON: duplicate key " + parsed.get<std::string>());
    return true;
  });
}

void append_utf8(std::string& out, unsigned code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
}

// ---- A strict reader for the XML that SVG is: elements, attributes, text and references. ----

struct xml_element {
  std::string name;
  std::map<std::string, std::string> attrs;
  int parent = -1;
  std::string text;  ///< the element's own character data, references decoded
};

class xml_reader {
 public:
  /// The elements in document order; throws unless `text` is one well-formed root element.
  static std::vector<xml_element> parse(std::string_view text) {
    xml_reader r(text);
    r.skip_space();
    if (r.peek() != '<') r.fail("expected the root element");
    r.element(-1);
    r.skip_space();
    if (r.pos_ != text.size()) r.fail("content after the root element");
    return r.out_;
  }

 private:
  explicit xml_reader(std::string_view text) : in_(text) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("XML at " + std::to_string(pos_) + ": " + why);
  }
  char peek() const { return pos_ < in_.size() ? in_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < in_.size() && (in_[pos_] == ' ' || in_[pos_] == '\n' || in_[pos_] == '\r' || in_[pos_] == '\t'))
      ++pos_;
  }
  std::string name() {
    const auto first = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; };
    const auto rest = [&](char c) { return first(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; };
    if (!first(peek())) fail("expected a name");
    const std::size_t start = pos_;
    while (rest(peek())) ++pos_;
    return std::string(in_.substr(start, pos_ - start));
  }
  /// A character, or a reference decoded; `stop` ends the run and is not consumed.
  void char_data(std::string& out, char stop) {
    while (pos_ < in_.size() && in_[pos_] != stop) {
      const char c = in_[pos_];
      if (c == '<') fail("raw '<' in character data");
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') fail("control character");
      if (c != '&') {
        out += c;
        ++pos_;
        continue;
      }
      const std::size_t semi = in_.find(';', pos_);
      if (semi == std::string_view::npos) fail("unterminated reference");
      const std::string_view ref = in_.substr(pos_ + 1, semi - pos_ - 1);
      static const std::map<std::string_view, char> named{
          {"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
      if (const auto it = named.find(ref); it != named.end()) {
        out += it->second;
      } else if (ref.size() > 1 && ref[0] == '#') {
        const bool hex = ref[1] == 'x';
        const std::string digits(ref.substr(hex ? 2 : 1));
        if (digits.empty() ||
            digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
          fail("bad character reference");
        append_utf8(out, static_cast<unsigned>(std::stoul(digits, nullptr, hex ? 16 : 10)));
      } else {
        fail("unknown entity &" + std::string(ref) + ";");
      }
      pos_ = semi + 1;
    }
  }

  void element(int parent) {
    ++pos_;  // '<'
    xml_element e;
    e.name = name();
    e.parent = parent;
    for (;;) {
      const std::size_t before = pos_;
      skip_space();
      if (peek() == '/' || peek() == '>') break;
      if (pos_ == before) fail("attributes must be separated by space");
      std::string key = name();
      if (peek() != '=') fail("expected '='");
      ++pos_;
      const char quote = peek();
      if (quote != '"' && quote != '\'') fail("unquoted attribute value");
      ++pos_;
      std::string value;
      char_data(value, quote);
      if (peek() != quote) fail("unterminated attribute value");
      ++pos_;
      if (!e.attrs.emplace(std::move(key), std::move(value)).second) fail("duplicate attribute");
    }
    const int index = static_cast<int>(out_.size());
    out_.push_back(std::move(e));
    if (peek() == '/') {
      ++pos_;
      if (peek() != '>') fail("expected '>'");
      ++pos_;
      return;
    }
    ++pos_;  // '>'
    for (;;) {
      std::string text;
      char_data(text, '<');
      out_[static_cast<std::size_t>(index)].text += text;
      if (pos_ >= in_.size()) fail("unclosed element " + out_[static_cast<std::size_t>(index)].name);
      if (in_.substr(pos_, 2) == "</") {
        pos_ += 2;
        if (name() != out_[static_cast<std::size_t>(index)].name) fail("mismatched end tag");
        skip_space();
        if (peek() != '>') fail("expected '>'");
        ++pos_;
        return;
      }
      element(index);
    }
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  std::vector<xml_element> out_;
};

// ---- The step: two ranks, three streams each, all op kinds that a trace must name. ----

// Typed ops are named by their keys; arbitrary text reaches a trace only through communicator
// names, which the label of an untyped collective or send carries. The tricky names are those.
const std::string json_tricky = "ag \"x\" \\ y";                   // JSON must escape both
const std::string xml_tricky = "mlp<fc1> & \"gelu\"";              // XML must escape all three
const std::string control = std::string("ctl") + '\x01' + "char";  // neither may carry it raw

// The labels of the untyped ops below: rank 0's untyped all-gather on the communicator `json_tricky`,
// rank 1's untyped send on the communicator named `xml_tricky` and `control`.
const std::string gather_label = "all_gather " + json_tricky;
const std::string send_label = "send " + xml_tricky + " " + control;

sc::op compute(int stream, sc::op_type type, sc::location at, double flops = 0) {
  return sc::op{.kind = sc::op_kind::compute, .stream = stream, .key = {.type = type, .at = at}, .flops = flops};
}
sc::op coll(int stream, sc::op_key key, sc::collective c, int comm, std::int64_t bytes) {
  return sc::op{
      .kind = sc::op_kind::collective, .stream = stream, .key = key, .coll = c, .comm = comm, .seq = 0, .bytes = bytes};
}

std::vector<sc::program> programs() {
  sc::program r0;
  r0.rank = 0;
  r0.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::tp_comm, -1}, {sc::stream_role::dp_comm, -1}};
  r0.comms = {{json_tricky, {0, 1}}, {"dp", {0, 1}}};
  r0.num_events = 1;
  r0.ops = {compute(0, sc::op_type::attn_core_fprop, {.layer = 0}, 1e9),
            sc::op{.kind = sc::op_kind::record, .stream = 0, .event = 0},
            sc::op{.kind = sc::op_kind::wait, .stream = 1, .event = 0},
            coll(1, {}, sc::collective::all_gather, 0, 1 << 20),
            sc::op{.kind = sc::op_kind::compute,
                   .stream = 0,
                   .key = {.type = sc::op_type::fc1_fprop, .at = {.layer = 0}},
                   .memory_bytes = 4096},
            coll(2, {.type = sc::op_type::dp_grad_reduce, .at = {.chunk = 0, .bucket = 0}},
                 sc::collective::reduce_scatter, 1, 2048)};

  sc::program r1;
  r1.rank = 1;
  r1.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::tp_comm, -1}, {sc::stream_role::tp_comm, -1}};
  r1.comms = {{"tp", {0, 1}}, {xml_tricky + " " + control, {0, 1}}};
  const auto ag_chunk = [](int split) {
    return sc::op_key{
        .type = sc::op_type::tp_all_gather, .slot = sc::op_type::qkv_fprop, .at = {.layer = 0, .split = split}};
  };
  r1.ops = {compute(0, sc::op_type::attn_core_fprop, {.layer = 0}, 1e9),
            coll(1, ag_chunk(0), sc::collective::all_gather, 0, 4096),
            coll(2, ag_chunk(1), sc::collective::all_gather, 0, 4096), compute(0, sc::op_type::qkv_fprop, {.layer = 0}),
            sc::op{.kind = sc::op_kind::send, .stream = 1, .comm = 1, .peer = 0, .bytes = 64}};
  return {r0, r1};
}

/// 9 intervals that take time, 2 of zero length (the record and the wait). Rank 1's first two
/// ops meet at 0.1 + 0.2, which is not 0.3 in binary floating point; the second all-gather chunk
/// ends a fraction of a nanosecond after 30 us, and the send lasts 6 us and 4 ns.
sim::result result() {
  sim::result r;
  r.step_time_us = 40;
  r.intervals = {{0, 0, 0, 0, 10},    {0, 0, 1, 10, 10},         {0, 1, 2, 10, 10},         {0, 1, 3, 10, 25},
                 {0, 0, 4, 10, 22.5}, {0, 2, 5, 25, 40},         {1, 0, 0, 0.1, 0.1 + 0.2}, {1, 0, 3, 0.1 + 0.2, 12},
                 {1, 1, 1, 12, 20},   {1, 2, 2, 12, 30.0000004}, {1, 1, 4, 30, 36.004}};
  r.compute_us = 22.5;
  r.comm_us[static_cast<std::size_t>(sc::family::tp)] = 18;
  r.exposed_comm_us[static_cast<std::size_t>(sc::family::tp)] = 7.5;
  return r;
}

json chrome_trace(const sim::result& r) {
  std::ostringstream os;
  tr::write_chrome_trace(os, programs(), r);
  return strict_parse(os.str());
}

std::string svg_text(const sim::result& r, const tr::svg_options& options = {}) {
  std::ostringstream os;
  tr::write_svg_timeline(os, programs(), r, options);
  return os.str();
}

std::vector<const json*> events_with(const json& trace, std::string_view ph) {
  std::vector<const json*> out;
  for (const json& e : trace.at("traceEvents"))
    if (e.at("ph").get<std::string>() == ph) out.push_back(&e);
  return out;
}

const json& event_named(const json& trace, std::string_view name, int pid) {
  for (const json& e : trace.at("traceEvents"))
    if (e.at("name").get<std::string>() == name && e.at("pid").get<int>() == pid &&
        e.at("ph").get<std::string>() != "M")
      return e;
  throw std::runtime_error("no event " + std::string(name));
}

/// The `<rect class="op">` whose tooltip starts with `label`.
const xml_element& bar(const std::vector<xml_element>& svg, std::string_view label) {
  for (std::size_t i = 0; i < svg.size(); ++i)
    if (svg[i].name == "title" && svg[i].text.rfind(std::string(label) + "\n", 0) == 0)
      return svg[static_cast<std::size_t>(svg[i].parent)];
  throw std::runtime_error("no bar " + std::string(label));
}

double attr(const xml_element& e, const std::string& name) { return std::stod(e.attrs.at(name)); }

std::size_t count_if(const std::vector<xml_element>& svg, std::string_view name, std::string_view cls = {}) {
  return static_cast<std::size_t>(std::count_if(svg.begin(), svg.end(), [&](const xml_element& e) {
    return e.name == name && (cls.empty() || (e.attrs.count("class") && e.attrs.at("class") == cls));
  }));
}

/// Texts of the `<text>` elements inside the group of class `cls`.
std::vector<std::string> texts_in(const std::vector<xml_element>& svg, std::string_view cls) {
  std::vector<std::string> out;
  for (const auto& e : svg)
    if (e.name == "text" && e.parent >= 0) {
      const auto& g = svg[static_cast<std::size_t>(e.parent)];
      if (g.attrs.count("class") && g.attrs.at("class") == cls) out.push_back(e.text);
    }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const std::string micro_s = "\xc2\xb5s";

}  // namespace

TEST_CASE("trace test readers reject malformed JSON and XML") {
  CHECK(strict_parse(R"({"a":[1,-2.5e3,"x\"\u0001"],"b":{},"c":null})") ==
        json{{"a", {1, -2.5e3, "x\"\x01"}}, {"b", json::object()}, {"c", nullptr}});
  for (const char* bad : {R"({"a":1,})", R"([1 2])", R"({a:1})", R"({"a":01})", R"(["\x"])", "[\"a\x01\"]", R"([1.])",
                          R"({"a":1} x)", R"([)", "[\"\xff\"]"})
    CHECK_THROWS_AS(strict_parse(bad), json::parse_error);
  // A key may repeat in different objects, never within one.
  CHECK_NOTHROW(strict_parse(R"({"a":{"a":1,"b":2},"b":[{"a":1},{"a":2}]})"));
  for (const char* repeated : {R"({"a":1,"a":2})", R"({"a":{"b":1,"b":2}})", R"([{"a":1},{"b":{},"b":2}])"})
    CHECK_THROWS_AS(strict_parse(repeated), std::runtime_error);

  CHECK_NOTHROW(xml_reader::parse(R"(<svg a="1"><g><title>x &amp; &#181;</title></g><r/></svg>)"));
  for (const char* bad :
       {"<svg><rect></svg>", "<svg>a < b</svg>", "<svg>&bogus;</svg>", "<svg x=1/>", "<svg a=\"1\"b=\"2\"/>",
        "<svg a=\"1\" a=\"2\"/>", "<svg/><svg/>", "<svg>", "<svg>\x01</svg>", "<svg x=\"<\"/>"})
    CHECK_THROWS_AS(xml_reader::parse(bad), std::runtime_error);
}

TEST_CASE("chrome trace is strict JSON with one complete event per op that took time") {
  const json trace = chrome_trace(result());
  REQUIRE(trace.is_object());
  CHECK(trace.at("displayTimeUnit").get<std::string>() == "ms");
  REQUIRE(trace.at("traceEvents").is_array());

  // 2 processes and 6 threads, each named and given a sort index; 9 X events and 2 instants.
  CHECK(events_with(trace, "M").size() == 16);
  CHECK(events_with(trace, "i").size() == 2);
  const auto complete = events_with(trace, "X");
  REQUIRE(complete.size() == 9);

  struct expected {
    std::string name;
    int pid, tid;
    double ts, dur;
    std::string cat;
  };
  const std::vector<expected> want{{"attn_core_fprop l0", 0, 0, 0, 10, "compute"},
                                   {gather_label, 0, 1, 10, 15, "none"},  // untyped communication: family none
                                   {"fc1_fprop l0", 0, 0, 10, 12.5, "compute"},
                                   {"dp_grad_reduce c0 b0", 0, 2, 25, 15, "dp"},
                                   {"attn_core_fprop l0", 1, 0, 0.1, 0.2, "compute"},
                                   {"qkv_fprop l0", 1, 0, 0.3, 11.7, "compute"},
                                   {"tp_all_gather qkv_fprop l0 s0", 1, 1, 12, 8, "tp"},
                                   {"tp_all_gather qkv_fprop l0 s1", 1, 2, 12, 18, "tp"},
                                   {send_label, 1, 1, 30, 6.004, "none"}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    const json& e = *complete[i];
    CHECK(e.at("name").get<std::string>() == want[i].name);
    CHECK(e.at("pid").get<int>() == want[i].pid);
    CHECK(e.at("tid").get<int>() == want[i].tid);
    // Exact: times are written to the nanosecond, so 0.1 + 0.2 comes out as 0.3 and its
    // duration as 0.2 (rank 1's second op starts exactly where its first ended), nothing below
    // a nanosecond is kept and nothing above is lost.
    CHECK(e.at("ts").get<double>() == want[i].ts);
    CHECK(e.at("dur").get<double>() == want[i].dur);
    CHECK(e.at("cat").get<std::string>() == want[i].cat);
  }
}

TEST_CASE("chrome trace names processes, threads and zero-length event ops") {
  const json trace = chrome_trace(result());
  std::map<std::pair<int, int>, std::string> threads;
  std::map<int, std::string> processes;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph").get<std::string>() != "M") continue;
    const int pid = e.at("pid").get<int>();
    const auto what = e.at("name").get<std::string>();
    if (what == "process_name") processes[pid] = e.at("args").at("name").get<std::string>();
    if (what == "thread_name") threads[{pid, e.at("tid").get<int>()}] = e.at("args").at("name").get<std::string>();
  }
  CHECK(processes == std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}});
  CHECK(threads == std::map<std::pair<int, int>, std::string>{{{0, 0}, "compute"},
                                                              {{0, 1}, "tp_comm"},
                                                              {{0, 2}, "dp_comm"},
                                                              {{1, 0}, "compute"},
                                                              {{1, 1}, "tp_comm (stream 1)"},
                                                              {{1, 2}, "tp_comm (stream 2)"}});

  const auto instants = events_with(trace, "i");
  REQUIRE(instants.size() == 2);
  CHECK(instants[0]->at("name").get<std::string>() == "record e0");
  CHECK(instants[1]->at("name").get<std::string>() == "wait e0");
  for (const json* e : instants) {
    CHECK(e->at("ts").get<double>() == 10);
    CHECK(e->at("s").get<std::string>() == "t");
    CHECK_FALSE(e->contains("dur"));
  }
}

TEST_CASE("chrome trace escapes names and carries op details in args") {
  std::ostringstream os;
  tr::write_chrome_trace(os, programs(), result());
  const std::string text = os.str();
  // The label and the communicator's name, each escaped.
  CHECK(text.find(R"("all_gather ag \"x\" \\ y")") != std::string::npos);
  CHECK(text.find(R"("comm":"ag \"x\" \\ y")") != std::string::npos);
  CHECK(text.find(R"("send mlp<fc1> & \"gelu\" ctl\u0001char")") != std::string::npos);
  CHECK(text.find(R"("comm":"mlp<fc1> & \"gelu\" ctl\u0001char")") != std::string::npos);
  CHECK(text.find('\x01') == std::string::npos);

  const json trace = strict_parse(text);
  const json& attn = event_named(trace, "attn_core_fprop l0", 0).at("args");
  CHECK(attn.at("op").get<int>() == 0);
  CHECK(attn.at("kind").get<std::string>() == "compute");
  CHECK(attn.at("flops").get<double>() == 1e9);
  CHECK_FALSE(attn.contains("bytes"));

  const json& gather = event_named(trace, gather_label, 0).at("args");
  CHECK(gather.at("op").get<int>() == 3);
  CHECK(gather.at("kind").get<std::string>() == "collective");
  CHECK(gather.at("collective").get<std::string>() == "all_gather");
  CHECK(gather.at("comm").get<std::string>() == json_tricky);
  CHECK_FALSE(gather.contains("family"));  // untyped: family none, which args leave out
  CHECK(gather.at("bytes").get<std::int64_t>() == 1 << 20);
  CHECK_FALSE(gather.contains("flops"));

  const json& chunk = event_named(trace, "tp_all_gather qkv_fprop l0 s0", 1).at("args");
  CHECK(chunk.at("family").get<std::string>() == "tp");
  CHECK(chunk.at("comm").get<std::string>() == "tp");
  CHECK(event_named(trace, "dp_grad_reduce c0 b0", 0).at("args").at("family").get<std::string>() == "dp");

  CHECK(event_named(trace, "fc1_fprop l0", 0).at("args").at("memory_bytes").get<std::int64_t>() == 4096);
  const json& send = event_named(trace, send_label, 1).at("args");
  CHECK(send.at("peer").get<int>() == 0);
  CHECK(send.at("comm").get<std::string>() == xml_tricky + " " + control);
  CHECK(event_named(trace, "record e0", 0).at("args").at("event").get<int>() == 0);

  const json& other = trace.at("otherData");
  CHECK(other.at("step_time_us").get<double>() == 40);
  CHECK(other.at("exposed_comm_us.tp").get<double>() == 7.5);
  REQUIRE(other.at("deadlock").is_boolean());
  CHECK_FALSE(other.at("deadlock").get<bool>());
  CHECK_FALSE(other.contains("wait_for_graph"));
}

TEST_CASE("chrome trace of a deadlocked step carries the wait-for graph") {
  sim::result r = result();
  r.deadlock = true;
  r.wait_for_graph = "rank 0 op 3 (\"ag\"): waits for rank 1\nrank 1 op 1: waits for rank 0\n";
  const json trace = chrome_trace(r);
  CHECK(trace.at("otherData").at("deadlock").get<bool>());
  CHECK(trace.at("otherData").at("wait_for_graph").get<std::string>() == r.wait_for_graph);
}

TEST_CASE("trace writers keep intervals the programs lack and drop non-finite ones") {
  sim::result r = result();
  r.intervals.push_back({5, 0, 2, 1, 2});   // no program for rank 5
  r.intervals.push_back({0, 0, 99, 2, 3});  // rank 0 has no op 99
  r.intervals.push_back({0, 1, 3, 0, std::numeric_limits<double>::infinity()});

  const json trace = chrome_trace(r);
  CHECK(events_with(trace, "X").size() == 11);
  CHECK(event_named(trace, "op 2", 5).at("cat").get<std::string>() == "none");
  CHECK(event_named(trace, "op 99", 0).at("tid").get<int>() == 0);
  bool named_rank_5 = false;
  for (const json& e : trace.at("traceEvents"))
    named_rank_5 |=
        e.at("name").get<std::string>() == "process_name" && e.at("args").at("name").get<std::string>() == "rank 5";
  CHECK(named_rank_5);

  const auto svg = xml_reader::parse(svg_text(r));
  CHECK(count_if(svg, "rect", "op") == 11);
  CHECK(contains(texts_in(svg, "rows"), "rank 5 stream 0"));
}

TEST_CASE("svg timeline is well-formed XML with one bar per op that took time") {
  const std::string text = svg_text(result());
  CHECK(text.rfind("<svg", 0) == 0);
  const auto svg = xml_reader::parse(text);
  REQUIRE(svg.front().name == "svg");
  CHECK(svg.front().attrs.at("xmlns") == "http://www.w3.org/2000/svg");

  // 1 background + 4 legend swatches (compute, tp, dp, other) + 9 bars + the summary lanes'
  // spans; the record and the wait take no time and get no bar.
  CHECK(count_if(svg, "rect") == 14 + count_if(svg, "rect", "exposed"));
  CHECK(count_if(svg, "rect", "background") == 1);
  CHECK(count_if(svg, "rect", "legend") == 4);
  CHECK(count_if(svg, "rect", "op") == 9);
  CHECK(count_if(svg, "title") == 9);
  for (const std::string label : {"attn_core_fprop l0", "fc1_fprop l0", "dp_grad_reduce c0 b0", "qkv_fprop l0",
                                  "tp_all_gather qkv_fprop l0 s0", "tp_all_gather qkv_fprop l0 s1"})
    CHECK(bar(svg, label).name == "rect");
  CHECK(bar(svg, gather_label).name == "rect");
  // The send's label with the control byte as U+FFFD.
  CHECK(bar(svg, "send " + xml_tricky +
                     " ctl\xef\xbf\xbd"
                     "char")
            .name == "rect");
  CHECK_THROWS(bar(svg, "record e0"));
  CHECK(text.find("all_gather ag &quot;x&quot; \\ y") != std::string::npos);
  CHECK(text.find("send mlp&lt;fc1&gt; &amp; &quot;gelu&quot; ctl") != std::string::npos);
  CHECK(text.find('\x01') == std::string::npos);

  std::vector<std::string> legend;
  for (std::size_t i = 0; i < svg.size(); ++i)
    if (svg[i].attrs.count("class") && svg[i].attrs.at("class") == "legend") legend.push_back(svg[i + 1].text);
  CHECK(legend == std::vector<std::string>{"compute", "tp", "dp", "other"});

  const auto rows = texts_in(svg, "rows");
  CHECK(rows == std::vector<std::string>{"rank 0 compute", "rank 0 tp_comm", "rank 0 dp_comm", "rank 1 compute",
                                         "rank 1 tp_comm (stream 1)", "rank 1 tp_comm (stream 2)"});
  bool has_step_time = false;
  for (const auto& e : svg) has_step_time |= e.name == "text" && e.text == "step time 40 " + micro_s;
  CHECK(has_step_time);
  CHECK(text.find("deadlock") == std::string::npos);
}

TEST_CASE("svg timeline places bars by time and row") {
  const auto svg = xml_reader::parse(svg_text(result()));
  const double width = attr(svg.front(), "width");
  const double height = attr(svg.front(), "height");
  for (const auto& e : svg)
    if (e.name == "rect") {
      CHECK(attr(e, "x") >= 0);
      CHECK(attr(e, "x") + attr(e, "width") <= width);
      CHECK(attr(e, "y") + attr(e, "height") <= height);
    }

  // The axis is linear: attn_core_fprop (0-10 us) ends where the op starting at 10 us begins, which
  // lasts 12.5 us and so is 1.25 times as wide.
  const auto& attn = bar(svg, "attn_core_fprop l0");  // rank 0's, the first in document order
  const auto& mlp = bar(svg, "fc1_fprop l0");
  CHECK(attr(attn, "x") + attr(attn, "width") == doctest::Approx(attr(mlp, "x")).epsilon(1e-4));
  CHECK(attr(mlp, "width") == doctest::Approx(attr(attn, "width") * 1.25).epsilon(1e-3));

  // The step's last op ends on the step-time marker.
  const auto& reduce = bar(svg, "dp_grad_reduce c0 b0");
  const auto marker = std::find_if(svg.begin(), svg.end(), [](const xml_element& e) {
    return e.attrs.count("class") && e.attrs.at("class") == "step";
  });
  REQUIRE(marker != svg.end());
  CHECK(attr(reduce, "x") + attr(reduce, "width") == doctest::Approx(attr(*marker, "x1")).epsilon(1e-4));

  // Rows in rank, then stream order; ops of one stream share a row.
  CHECK(attr(attn, "y") == attr(mlp, "y"));
  const auto& chunk0 = bar(svg, "tp_all_gather qkv_fprop l0 s0");
  const auto& chunk1 = bar(svg, "tp_all_gather qkv_fprop l0 s1");
  const auto& send = bar(svg, "send " + xml_tricky +
                                  " ctl\xef\xbf\xbd"
                                  "char");
  CHECK(attr(attn, "y") < attr(bar(svg, gather_label), "y"));
  CHECK(attr(bar(svg, gather_label), "y") < attr(reduce, "y"));
  CHECK(attr(reduce, "y") < attr(chunk0, "y"));
  CHECK(attr(chunk0, "y") < attr(chunk1, "y"));
  CHECK(attr(chunk0, "y") == attr(send, "y"));
}

TEST_CASE("svg timeline summary lanes: each family's communication with no compute beside it, on any rank") {
  const auto svg = xml_reader::parse(svg_text(result()));
  // Rank 0 computes 0-22.5 and reduces (dp) 25-40; its untyped all-gather (other) runs 10-25.
  // Rank 1 computes 0.1-12, gathers (tp) 12-30 and sends (other) 30-36.004.
  CHECK(texts_in(svg, "summary") ==
        std::vector<std::string>{"exposed tp (any rank)", "exposed dp (any rank)", "exposed other (any rank)"});
  // Each lane's extent, by its row (y): tp exposed 12-30 us, dp 25-40 us, other 22.5-36.004 us
  // with a gap; a pixel fully exposed is opaque.
  std::map<double, std::pair<double, double>> extent;
  std::map<double, double> most_opaque;
  for (const auto& e : svg)
    if (e.name == "rect" && e.attrs.count("class") && e.attrs.at("class") == "exposed") {
      auto [it, fresh] = extent.try_emplace(attr(e, "y"), attr(e, "x"), attr(e, "x") + attr(e, "width"));
      it->second.first = std::min(it->second.first, attr(e, "x"));
      it->second.second = std::max(it->second.second, attr(e, "x") + attr(e, "width"));
      most_opaque[attr(e, "y")] = std::max(most_opaque[attr(e, "y")], attr(e, "fill-opacity"));
    }
  REQUIRE(extent.size() == 3);
  const auto lane = [&](std::size_t i) { return std::next(extent.begin(), static_cast<std::ptrdiff_t>(i))->second; };
  const double tp = lane(0).second - lane(0).first, dp = lane(1).second - lane(1).first;
  const double per_us = dp / 15;  // pixels per microsecond: dp is exposed for 15 us
  CHECK(tp == doctest::Approx(dp * 18 / 15).epsilon(0.02));
  CHECK(lane(1).first - lane(0).first == doctest::Approx(13 * per_us).epsilon(0.02));
  for (const auto& [y, opacity] : most_opaque) CHECK(opacity == 1);
  tr::svg_options without;
  without.summary_lanes = false;
  CHECK(count_if(xml_reader::parse(svg_text(result(), without)), "rect", "exposed") == 0);
}

TEST_CASE("svg timeline merges sub-pixel bars: a million-op step stays a picture of its pixels") {
  sc::program p;
  p.rank = 0;
  p.streams = {{sc::stream_role::compute, 0}};
  sim::result r;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    p.ops.push_back(compute(0, sc::op_type::qkv_fprop, {.layer = i}));
    r.intervals.push_back({0, 0, i, i * 1.0, i + 1.0});
  }
  // One wide op at the end stays a bar of its own.
  p.ops.push_back(compute(0, sc::op_type::proj_fprop, {.layer = 0}));
  r.intervals.push_back({0, 0, n, n, 2.0 * n});
  r.step_time_us = 2.0 * n;
  std::ostringstream os;
  tr::write_svg_timeline(os, {p}, r, {.width = 1200});
  const std::string text = os.str();
  CHECK(text.size() < 20000);
  const auto svg = xml_reader::parse(text);
  CHECK(count_if(svg, "rect", "op") == 2);
  CHECK(text.find("20000 ops from qkv_fprop l0") != std::string::npos);
  CHECK(bar(svg, "proj_fprop l0").name == "rect");
}

TEST_CASE("svg timeline axis ticks switch from microseconds to milliseconds") {
  const auto ticks_us = texts_in(xml_reader::parse(svg_text(result())), "ticks");
  CHECK(ticks_us.front() == "0 " + micro_s);
  CHECK(contains(ticks_us, "5 " + micro_s));
  CHECK(ticks_us.back() == "40 " + micro_s);

  sim::result slow = result();
  slow.step_time_us *= 100;
  for (auto& iv : slow.intervals) {
    iv.start_us *= 100;
    iv.end_us *= 100;
  }
  const auto svg = xml_reader::parse(svg_text(slow));
  const auto ticks_ms = texts_in(svg, "ticks");
  CHECK(ticks_ms ==
        std::vector<std::string>{"0 ms", "0.5 ms", "1 ms", "1.5 ms", "2 ms", "2.5 ms", "3 ms", "3.5 ms", "4 ms"});
  bool has_step_time = false;
  for (const auto& e : svg) has_step_time |= e.name == "text" && e.text == "step time 4 ms";
  CHECK(has_step_time);
}

TEST_CASE("svg timeline width is configurable and a deadlock is stated") {
  const auto narrow = xml_reader::parse(svg_text(result(), {.width = 800, .row_height = 24}));
  CHECK(attr(narrow.front(), "width") == 800);
  for (const auto& e : narrow)
    if (e.name == "rect") CHECK(attr(e, "x") + attr(e, "width") <= 800);
  CHECK(attr(bar(narrow, "attn_core_fprop l0"), "height") == 20);
  CHECK(attr(bar(narrow, gather_label), "y") - attr(bar(narrow, "attn_core_fprop l0"), "y") == 24);

  sim::result r = result();
  r.deadlock = true;
  const std::string text = svg_text(r);
  CHECK_NOTHROW(xml_reader::parse(text));
  CHECK(text.find("deadlock") != std::string::npos);
}
