// The measured cost model: times for key patterns replace the analytic estimates of the ops they
// match, the most specific pattern winning; a bad document is rejected with every problem named.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/sim/cost/measured_cost.hpp>

namespace sc = overlap::schedule;
namespace sim = overlap::sim;
using nlohmann::json;

namespace {
sc::op compute(sc::op_key k) {
  return {.kind = sc::op_kind::compute, .key = k, .flops = 4e12, .memory_bytes = 1 << 26};
}
sc::op collective(sc::op_key k) {
  return {.kind = sc::op_kind::collective, .key = k, .coll = sc::collective::all_gather, .bytes = 1 << 26};
}
sc::op_key key(sc::op_type t, sc::location at = {}) { return {.type = t, .at = at}; }

const sim::machine h100 = sim::h100_node();

/// The problem lines of the std::invalid_argument that loading `doc` throws, sorted; the
/// header line must count them.
std::vector<std::string> problems(const json& doc) {
  try {
    sim::measured_cost_model m(h100, doc);
  } catch (const std::invalid_argument& e) {
    std::istringstream text(e.what());
    std::string header, line;
    std::getline(text, header);
    std::vector<std::string> lines;
    while (std::getline(text, line)) lines.push_back(line.substr(2));
    const std::string count = std::to_string(lines.size()) + (lines.size() == 1 ? " problem:" : " problems:");
    CHECK(header == "measured costs: " + count);
    std::sort(lines.begin(), lines.end());
    return lines;
  }
  FAIL("the document was accepted");
  return {};
}
}  // namespace

TEST_CASE("the most specific matching pattern times an op, unmatched ops keep the analytic estimate") {
  const json doc = {
      {"compute_us",
       {{"fc1_fprop", 800.0},
        {"fc1_fprop l3", 900.0},
        {"fc1_fprop l3 mb1", 950.0},
        {"* l0", 150.0},
        {"fc1_fprop l0", 700.0}}},
      {"comm_us", {{"tp_all_gather", 20.0}, {"tp_all_gather qkv_fprop mb*", 40.0}, {"dp_grad_reduce", 3120.0}}}};
  const sim::measured_cost_model m(h100, doc);
  const sim::analytic_cost_model analytic(h100);
  CHECK(m.measured() == 8);
  const int sms = h100.sms;

  CHECK(m.compute_us(compute(key(sc::op_type::fc1_fprop, {.layer = 1, .micro_batch = 0})), sms) == 800.0);
  CHECK(m.compute_us(compute(key(sc::op_type::fc1_fprop, {.layer = 3, .micro_batch = 0})), sms) == 900.0);
  CHECK(m.compute_us(compute(key(sc::op_type::fc1_fprop, {.layer = 3, .micro_batch = 1})), sms) == 950.0);
  // "fc1_fprop l0" settles what "fc1_fprop" and "* l0" would both claim.
  CHECK(m.compute_us(compute(key(sc::op_type::fc1_fprop, {.layer = 0, .micro_batch = 1})), sms) == 700.0);
  CHECK(m.compute_us(compute(key(sc::op_type::fc2_fprop, {.layer = 0, .micro_batch = 0})), sms) == 150.0);
  const auto fc2_l1 = compute(key(sc::op_type::fc2_fprop, {.layer = 1, .micro_batch = 0}));
  CHECK(m.compute_us(fc2_l1, sms) == analytic.compute_us(fc2_l1, sms));
  CHECK(analytic.compute_us(fc2_l1, sms) != 150.0);
  // A measured time is for the whole GPU: on half the SMs it doubles.
  CHECK(m.compute_us(compute(key(sc::op_type::fc1_fprop, {.layer = 3, .micro_batch = 0})), sms / 2) ==
        doctest::Approx(1800.0));

  const auto gather = [](sc::op_type slot, int layer) {
    return collective({.type = sc::op_type::tp_all_gather, .slot = slot, .at = {.layer = layer, .micro_batch = 0}});
  };
  CHECK(m.comm_us(gather(sc::op_type::qkv_fprop, 2), 4, false) == 40.0);
  CHECK(m.comm_us(gather(sc::op_type::fc1_fprop, 2), 4, false) == 20.0);
  // "* l0" is a compute entry: it does not time communication of layer 0.
  CHECK(m.comm_us(gather(sc::op_type::fc1_fprop, 0), 4, false) == 20.0);
  // A measured communication time holds for any group size and placement.
  const auto reduce =
      collective({.type = sc::op_type::dp_grad_reduce, .at = {.chunk = 0, .bucket = 2}, .expert = true});
  CHECK(m.comm_us(reduce, 8, true) == 3120.0);
  CHECK(m.comm_us(reduce, 2, false) == 3120.0);
  const auto scatter = collective(key(sc::op_type::tp_reduce_scatter, {.layer = 0, .micro_batch = 0}));
  CHECK(m.comm_us(scatter, 4, false) == analytic.comm_us(scatter, 4, false));
}

TEST_CASE("equally specific entries that could time one op need an entry for what they share") {
  const auto fc1 = [](int layer, bool recompute) {
    return compute({.type = sc::op_type::fc1_fprop, .at = {.layer = layer, .micro_batch = 0}, .recompute = recompute});
  };
  const json tie = {{"compute_us", {{"fc1_fprop l3", 1.0}, {"fc1_fprop recompute", 2.0}}}};
  CHECK(problems(tie) ==
        std::vector<std::string>{"compute_us[\"fc1_fprop l3\"] and compute_us[\"fc1_fprop recompute\"]: both match "
                                 "\"fc1_fprop l3 recompute\" equally specifically; add an entry for "
                                 "\"fc1_fprop l3 recompute\""});
  json settled = tie;
  settled["compute_us"]["fc1_fprop l3 recompute"] = 3.0;
  const sim::measured_cost_model m(h100, settled);
  CHECK(m.compute_us(fc1(3, false), h100.sms) == 1.0);
  CHECK(m.compute_us(fc1(1, true), h100.sms) == 2.0);
  CHECK(m.compute_us(fc1(3, true), h100.sms) == 3.0);

  CHECK(problems({{"compute_us", {{"* l0", 1.0}, {"fc1_fprop", 2.0}}}}) ==
        std::vector<std::string>{"compute_us[\"* l0\"] and compute_us[\"fc1_fprop\"]: both match \"fc1_fprop l0\" "
                                 "equally specifically; add an entry for \"fc1_fprop l0\""});
  CHECK(problems({{"compute_us", {{"fc1_fprop l3", 1.0}, {"fc1_fprop l3 mb*", 2.0}}}}) ==
        std::vector<std::string>{
            "compute_us[\"fc1_fprop l3\"] and compute_us[\"fc1_fprop l3 mb*\"]: the same pattern; keep one"});

  // Equally specific but disjoint: no op is claimed twice.
  const sim::measured_cost_model layers(h100, {{"compute_us", {{"fc1_fprop l3", 1.0}, {"fc1_fprop l4", 2.0}}}});
  CHECK(layers.compute_us(fc1(4, false), h100.sms) == 2.0);
  // A flag is a part like any other: the expert group's reduction has its own time.
  const sim::measured_cost_model dp(h100, {{"comm_us", {{"dp_grad_reduce", 10.0}, {"dp_grad_reduce expert", 20.0}}}});
  const auto reduce = [](bool expert) {
    return collective({.type = sc::op_type::dp_grad_reduce, .at = {.chunk = 0, .bucket = 0}, .expert = expert});
  };
  CHECK(dp.comm_us(reduce(false), 8, false) == 10.0);
  CHECK(dp.comm_us(reduce(true), 8, false) == 20.0);
}

TEST_CASE("every problem of a document is reported at once, with its JSON path") {
  const json doc = {
      {"compute", json::object()},
      {"comm_us",
       {{"fc1_fprop", 5.0}, {"tp_all_gather dp_grad_reduce", 5.0}, {"event_wait", 1.0}, {"dp_grad_reduce", -1}}},
      {"compute_us",
       {{"fc1_fprop lx", 1.0},
        {"fc3_fprop", 1.0},
        {"", 1.0},
        {"proj_fprop l-1", 1.0},
        {"dp_grad_reduce", 1.0},
        {"fc1_fprop", "fast"},
        {"fc2_fprop", true},
        {"qkv_fprop", std::numeric_limits<double>::infinity()},
        {"fc1_dgrad lx", "slow"},
        {"fc2_dgrad l3", 1.0},
        {"fc2_dgrad recompute", 1.0}}}};
  std::vector<std::string> expected = {
      "\"compute\": unknown key; the sections are \"compute_us\" and \"comm_us\"",
      "comm_us[\"fc1_fprop\"]: fc1_fprop is a compute op type; move the entry to compute_us",
      "comm_us[\"tp_all_gather dp_grad_reduce\"]: the slot dp_grad_reduce is not a compute op type; a slot names "
      "the GEMM a TP op serves",
      "comm_us[\"event_wait\"]: event_wait ops take no time of their own; remove the entry",
      "comm_us[\"dp_grad_reduce\"]: -1 is negative; give microseconds >= 0",
      "compute_us[\"fc1_fprop lx\"]: 'lx' is not an op type, a coordinate (l, mb, c, b, s followed by a number "
      "or *), 'expert' or 'recompute'",
      "compute_us[\"fc3_fprop\"]: unknown op type 'fc3_fprop'",
      "compute_us[\"\"]: empty pattern",
      "compute_us[\"proj_fprop l-1\"]: negative coordinate 'l-1'",
      "compute_us[\"dp_grad_reduce\"]: dp_grad_reduce is a communication op type; move the entry to comm_us",
      "compute_us[\"fc1_fprop\"]: a string, not a number; give microseconds",
      "compute_us[\"fc2_fprop\"]: a boolean, not a number; give microseconds",
      "compute_us[\"qkv_fprop\"]: not finite; give finite microseconds",
      "compute_us[\"fc1_dgrad lx\"]: 'lx' is not an op type, a coordinate (l, mb, c, b, s followed by a number "
      "or *), 'expert' or 'recompute'",
      "compute_us[\"fc1_dgrad lx\"]: a string, not a number; give microseconds",
      "compute_us[\"fc2_dgrad l3\"] and compute_us[\"fc2_dgrad recompute\"]: both match \"fc2_dgrad l3 "
      "recompute\" equally specifically; add an entry for \"fc2_dgrad l3 recompute\""};
  std::sort(expected.begin(), expected.end());
  CHECK(problems(doc) == expected);

  CHECK(problems({{"compute_us", 5}}) ==
        std::vector<std::string>{"compute_us: a number, not an object; map key patterns to microseconds"});
  CHECK_THROWS_WITH_AS(sim::measured_cost_model(h100, json::array()),
                       "measured costs: the document is an array, not an object; write "
                       "{\"compute_us\": {...}, \"comm_us\": {...}}",
                       std::invalid_argument);
}

TEST_CASE("a file that cannot be read or is not JSON is a runtime_error, its bad entries are invalid_argument") {
  const std::string path = "measured_cost_test_file.json";
  const auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    return sim::measured_cost_model::from_file(h100, path);
  };
  CHECK(load(R"({"compute_us": {"fc1_fprop": 12.5}})").measured() == 1);
  CHECK_THROWS_WITH_AS(load(R"({"compute_us": {"fc1_fprop": -2}})"),
                       ("measured costs in " + path +
                        ": 1 problem:\n  compute_us[\"fc1_fprop\"]: -2 is negative; give microseconds >= 0")
                           .c_str(),
                       std::invalid_argument);
  // nlohmann stops at a number beyond a double's range, without saying where: the path is ours.
  CHECK_THROWS_WITH_AS(load(R"({"comm_us": {"dp_grad_reduce": 1},
                                 "compute_us": {"fc1_fprop": 1, "fc2_fprop": 1e400}})"),
                       ("measured costs in " + path +
                        ": 1 problem:\n  compute_us[\"fc2_fprop\"]: a number too large for a double; give finite "
                        "microseconds")
                           .c_str(),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(load(R"({"compute_us": {)"), doctest::Contains((path + ": not JSON: ").c_str()),
                       std::runtime_error);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(sim::measured_cost_model::from_file(h100, "/nonexistent/costs.json"),
                       "measured costs in /nonexistent/costs.json: cannot open the file", std::runtime_error);
}

TEST_CASE("a table written from display names times each op by its own entry") {
  using t = sc::op_type;
  const std::vector<sc::op> computes = {
      compute(key(t::fc1_fprop, {.layer = 3, .micro_batch = 0})),
      compute({.type = t::fc1_fprop, .at = {.layer = 3, .micro_batch = 0}, .recompute = true}),
      compute(key(t::fc1_fprop, {.layer = 3, .micro_batch = 1})),
      compute({.type = t::tp_ring_reduce, .slot = t::fc2_fprop, .at = {.layer = 3, .micro_batch = 0, .split = 1}}),
      compute(key(t::experts_fprop, {.layer = 2, .micro_batch = 0})),
      compute(key(t::optimizer_step))};
  std::vector<sc::op> comms = {
      collective({.type = t::tp_all_gather, .slot = t::qkv_fprop, .at = {.layer = 3, .micro_batch = 0}}),
      collective({.type = t::tp_reduce_scatter, .slot = t::fc2_fprop, .at = {.layer = 3, .micro_batch = 0}}),
      collective(key(t::dp_grad_reduce, {.chunk = 0, .bucket = 2})),
      collective({.type = t::dp_grad_reduce, .at = {.chunk = 0, .bucket = 2}, .expert = true}),
      collective(key(t::ep_dispatch, {.layer = 2, .micro_batch = 0}))};
  sc::op send = collective(key(t::pp_send_forward, {.micro_batch = 1, .chunk = 0}));
  send.kind = sc::op_kind::send;
  comms.push_back(send);

  json doc = {{"compute_us", json::object()}, {"comm_us", json::object()}};
  for (std::size_t i = 0; i < computes.size(); ++i) doc["compute_us"][sc::display_name(computes[i])] = 100.0 + i;
  for (std::size_t i = 0; i < comms.size(); ++i) doc["comm_us"][sc::display_name(comms[i])] = 500.0 + i;
  const std::string path = "measured_cost_round_trip.json";
  std::ofstream(path) << doc.dump(2);
  const auto m = sim::measured_cost_model::from_file(h100, path);
  std::remove(path.c_str());

  CHECK(m.measured() == computes.size() + comms.size());
  for (std::size_t i = 0; i < computes.size(); ++i) {
    CAPTURE(sc::display_name(computes[i]));
    CHECK(m.compute_us(computes[i], h100.sms) == 100.0 + i);
  }
  for (std::size_t i = 0; i < comms.size(); ++i) {
    CAPTURE(sc::display_name(comms[i]));
    CHECK(m.comm_us(comms[i], 8, true) == 500.0 + i);
  }
}

namespace {
/// The tie check as a pass over every pair of entries (the definition; the reader's check is
/// grouped and hashed): each pair equally specific and overlapping, the same pattern or with no
/// more specific entry covering what they share.
std::vector<std::string> pairwise_ties(const std::vector<std::string>& texts) {
  std::vector<sc::key_pattern> p;
  for (const std::string& t : texts) {
    std::string why;
    p.push_back(*sc::parse_key_pattern(t, why));
  }
  const auto each = [](const sc::key_pattern& a, const sc::key_pattern& b, auto f) {
    for (std::size_t i = 0; i < a.at.size(); ++i)
      if (!f(a.at[i], b.at[i])) return false;
    return f(a.type, b.type) && f(a.slot, b.slot) && f(a.expert, b.expert) && f(a.recompute, b.recompute);
  };
  const auto overlap = [&](const auto& a, const auto& b) {
    return each(a, b, [](const auto& x, const auto& y) { return !x || !y || *x == *y; });
  };
  const auto covers = [&](const auto& wide, const auto& narrow) {
    return each(wide, narrow, [](const auto& x, const auto& y) { return !x || x == y; });
  };
  const auto same = [&](const auto& a, const auto& b) {
    return each(a, b, [](const auto& x, const auto& y) { return x == y; });
  };
  const auto path = [&](std::size_t i) { return "compute_us[\"" + texts[i] + "\"]"; };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = i + 1; j < p.size(); ++j) {
      const int s = p[i].specificity();
      if (p[j].specificity() != s || !overlap(p[i], p[j])) continue;
      if (same(p[i], p[j])) {
        out.push_back(path(i) + " and " + path(j) + ": the same pattern; keep one");
        continue;
      }
      const sc::key_pattern shared = sim::detail::intersection(p[i], p[j]);
      if (std::any_of(p.begin(), p.end(), [&](const auto& c) { return c.specificity() > s && covers(c, shared); }))
        continue;
      const std::string q = sim::detail::quoted(sim::detail::pattern_text(shared));
      out.push_back(path(i) + " and " + path(j) + ": both match " + q + " equally specifically; add an entry for " + q);
    }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("the grouped tie check finds exactly the ties a pass over every pair finds") {
  std::uint64_t state = 11;
  const auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  const char* types[] = {"fc1_fprop", "fc2_fprop", "*"};
  const char* prefixes[] = {"l", "mb", "c", "b", "s"};
  int with_ties = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<std::string> texts;
    const std::size_t n = 2 + next(10);
    while (texts.size() < n) {
      std::string t = types[next(3)];
      for (const char* prefix : prefixes)
        if (next(3) == 0) (t += ' ') += prefix + std::to_string(next(2));
      if (next(4) == 0) t += " recompute";
      if (std::find(texts.begin(), texts.end(), t) == texts.end()) texts.push_back(t);
    }
    std::sort(texts.begin(), texts.end());  // the JSON object's order
    json doc = {{"compute_us", json::object()}};
    for (const std::string& t : texts) doc["compute_us"][t] = 1.0;
    const std::vector<std::string> want = pairwise_ties(texts);
    std::vector<std::string> got;
    try {
      sim::measured_cost_model m(h100, doc);
    } catch (const std::invalid_argument& e) {
      std::istringstream text(e.what());
      std::string line;
      std::getline(text, line);
      while (std::getline(text, line)) got.push_back(line.substr(2));
      std::sort(got.begin(), got.end());
    }
    if (got != want)
      FAIL_CHECK("round " << round << ": the grouped check finds " << got.size() << ", pairs " << want.size());
    with_ties += !want.empty();
  }
  CHECK(with_ties > 100);
}

TEST_CASE("a per-op file of 40,000 entries loads in linear time") {
  // A pass over every pair took 42 s under ASan for this size.
  json doc = {{"compute_us", json::object()}};
  for (int l = 0; l < 200; ++l)
    for (int mb = 0; mb < 200; ++mb)
      doc["compute_us"]["fc1_fprop l" + std::to_string(l) + " mb" + std::to_string(mb)] = 1.0 + l;
  const auto start = std::chrono::steady_clock::now();
  const sim::measured_cost_model m(h100, doc);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(m.measured() == 40000);
  CHECK(m.compute_us(compute({.type = sc::op_type::fc1_fprop, .at = {.layer = 7, .micro_batch = 3}}), h100.sms) == 8.0);
  CHECK(seconds < 5);
}
