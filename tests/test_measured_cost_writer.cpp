// The measured-cost writer: compute and communication ops in their sections keyed by display name
// (ops with equal keys averaged) or by op type (the mean per type), ops that take no time left
// out, the file read back by the measured cost model, and bad times rejected by name.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <overlap/sim/cost/measured_cost.hpp>
#include <overlap/sim/cost/measured_cost_writer.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace sc = overlap::schedule;
namespace sim = overlap::sim;
using nlohmann::json;
using K = sc::op_kind;
using sc::op_type;

namespace {
/// Two GEMMs of layer 0, an all-reduce of bucket 0 issued twice (one key), an event between
/// them, an untyped all-gather and a host sync.
sc::program program() {
  sc::program p;
  p.rank = 3;
  p.streams = {{sc::stream_role::compute, 0}, {sc::stream_role::dp_comm, 0}};
  p.comms = {{"dp", {2, 3}}};
  p.num_events = 1;
  p.ops = {
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc1_fprop, .at = {.layer = 0, .micro_batch = 0}}},
      {.kind = K::compute, .stream = 0, .key = {.type = op_type::fc1_fprop, .at = {.layer = 0, .micro_batch = 1}}},
      {.kind = K::record, .stream = 0, .key = {.type = op_type::event_record}, .event = 0},
      {.kind = K::wait, .stream = 1, .key = {.type = op_type::event_wait}, .event = 0},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::dp_grad_reduce, .at = {.bucket = 0}},
       .coll = sc::collective::all_reduce,
       .comm = 0,
       .bytes = 64},
      {.kind = K::collective,
       .stream = 1,
       .key = {.type = op_type::dp_grad_reduce, .at = {.bucket = 0}},
       .coll = sc::collective::all_reduce,
       .comm = 0,
       .bytes = 64},
      {.kind = K::collective,
       .stream = 1,
       .key = {.at = {.layer = 1}},
       .coll = sc::collective::all_gather,
       .comm = 0,
       .bytes = 64},
      {.kind = K::host_sync},
  };
  return p;
}

const std::vector<double> times = {100, 300, 0, 0, 40, 60, 7.25, 0};

std::string invalid(const sc::program& p, const std::vector<double>& us) {
  try {
    sim::measured_cost_document(p, us);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("the measured-cost document keys each op by its display name, in its section") {
  const json doc = sim::measured_cost_document(program(), times);
  const json expected = {
      {"compute_us", {{"fc1_fprop l0 mb0", 100.0}, {"fc1_fprop l0 mb1", 300.0}}},
      // one key issued twice: the mean; the untyped op by its key ("none"), which matches untyped ops
      {"comm_us", {{"dp_grad_reduce b0", 50.0}, {"none l1", 7.25}}}};
  CHECK(doc == expected);
}

TEST_CASE("per op type, the document has one entry per type: the mean over its ops") {
  const json doc = sim::measured_cost_document(program(), times, sim::measured_entries::per_type);
  const json expected = {{"compute_us", {{"fc1_fprop", 200.0}}},
                         {"comm_us", {{"dp_grad_reduce", 50.0}, {"none", 7.25}}}};
  CHECK(doc == expected);
}

TEST_CASE("a written document reads back: every timed op costs its time") {
  const sc::program p = program();
  const std::string path = "measured_cost_writer_test.json";
  sim::write_measured_costs(path, p, times);
  const sim::machine m = sim::h100_node();
  const auto model = sim::measured_cost_model::from_file(m, path);
  std::remove(path.c_str());
  CHECK(model.measured() == 4);
  CHECK(model.compute_us(p.ops[0], m.sms) == doctest::Approx(100));
  CHECK(model.compute_us(p.ops[1], m.sms) == doctest::Approx(300));
  CHECK(model.comm_us(p.ops[4], sim::placement{}) == 50);
  CHECK(model.comm_us(p.ops[5], sim::placement{}) == 50);
  CHECK(model.comm_us(p.ops[6], sim::placement{}) == 7.25);
}

TEST_CASE("the writer rejects a time count that is not the program's, and names a bad time") {
  const sc::program p = program();
  CHECK(invalid(p, {1, 2, 3}) ==
        "measured_cost_document: rank 3: 3 times for a program of 8 ops; give one time per op, in program order");
  std::vector<double> us = times;
  us[4] = -2.5;
  CHECK(invalid(p, us) ==
        "measured_cost_document: rank 3, op 4 'dp_grad_reduce b0': -2.5 us is negative; give "
        "finite microseconds >= 0");
  us[4] = std::nan("");
  CHECK(invalid(p, us) ==
        "measured_cost_document: rank 3, op 4 'dp_grad_reduce b0': nan us is not finite; give "
        "finite microseconds >= 0");
  us = times;
  us[2] = std::numeric_limits<double>::infinity();  // an op that takes no time still needs a valid one
  CHECK(invalid(p, us) ==
        "measured_cost_document: rank 3, op 2 'event_record': inf us is not finite; give finite "
        "microseconds >= 0");
  CHECK_THROWS_WITH_AS(sim::write_measured_costs("no_such_directory/costs.json", p, times),
                       "write_measured_costs: cannot write no_such_directory/costs.json", std::runtime_error);
}

TEST_CASE("the writer refuses a program whose keys the reader would refuse or read as other ops'") {
  // An op of type 200 was written as "invalid op type l1 mb0", which the reader refuses; one of
  // layer -7 as "fc1_fprop mb0", which the reader applies to every fc1_fprop of that micro-batch.
  sc::program p = program();
  p.ops[0].key.type = static_cast<op_type>(200);
  CHECK(invalid(p, times) ==
        "measured_cost_document: rank 3, op 0: op type 200 does not exist; the program is not "
        "one the measured-cost reader can match (1 problem(s) in all)");
  p = program();
  p.ops[1].key.at.layer = -7;
  CHECK(invalid(p, times).find("op 1: key coordinate l is -7") != std::string::npos);
}

TEST_CASE("a pattern with a control character is reported whole, the character escaped") {
  const std::string bad("fc1\0_fprop l3", 13);
  json doc = {{"compute_us", {{bad, 1.0}, {"no_such_type", 2.0}}}};
  std::string what;
  try {
    const sim::measured_cost_model model(sim::h100_node(), doc);
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  CHECK(what.find("fc1\\x00_fprop") != std::string::npos);
  CHECK(what.find("no_such_type") != std::string::npos);  // the message goes on past the NUL
}

TEST_CASE("the writer refuses entries the reader would refuse as ties") {
  // fc1_fprop of layer 3 (no micro-batch) and of micro-batch 0 (no layer): as patterns both match
  // "fc1_fprop l3 mb0".
  sc::program p = program();
  p.ops[0].key.at = {.layer = 3};
  p.ops[1].key.at = {.micro_batch = 0};
  const std::string why = invalid(p, times);
  CHECK(why.find("measured_cost_document: rank 3: its ops' display names do not tell them apart") == 0);
  CHECK(why.find("both match \"fc1_fprop l3 mb0\"") != std::string::npos);
  // Per op type there is nothing to tell apart.
  CHECK_NOTHROW((void)sim::measured_cost_document(p, times, sim::measured_entries::per_type));
}
