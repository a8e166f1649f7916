// libFuzzer target: bytes are a measured-cost document. from_file() throws only its documented
// errors (std::runtime_error for non-JSON text, std::invalid_argument for bad entries, a number
// beyond a double included); the constructor, on what nlohmann parses, throws
// std::invalid_argument or gives a model whose times are finite and not negative. Bytes that
// start with '#' are a decoded program instead (fuzz_input.hpp) with a time per op: the writer
// refuses it with std::invalid_argument or writes a document the reader accepts, in which every
// op the writer timed reads back its own time.
#include <unistd.h>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <overlap/sim/cost/measured_cost.hpp>
#include <overlap/sim/cost/measured_cost_writer.hpp>

#include "fuzz_input.hpp"

namespace {
/// The writer's round trip (see the top).
void round_trip(const std::uint8_t* data, std::size_t size) {
  namespace sc = overlap::schedule;
  fuzz::byte_reader in(data, size);
  const auto step = fuzz::decode_step(in);
  const sc::program& p = step.front();
  std::vector<double> us(p.ops.size());
  for (double& t : us) t = static_cast<double>(in.next<std::uint16_t>()) / 4;  // distinct-ish, >= 0
  nlohmann::json doc;
  try {
    doc = overlap::sim::measured_cost_document(p, us);
  } catch (const std::invalid_argument&) {
    return;
  }
  const overlap::sim::measured_cost_model model(overlap::sim::h100_node(), doc);  // throws: a finding
  // Ops of one key share the mean of their times; each op reads back its key's.
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const sc::op& o = p.ops[i];
    if (o.kind != sc::op_kind::compute && !sc::is_communication(o.kind)) continue;
    double sum = 0;
    int count = 0;
    for (std::size_t j = 0; j < p.ops.size(); ++j)
      if (p.ops[j].key == o.key && (p.ops[j].kind == sc::op_kind::compute) == (o.kind == sc::op_kind::compute))
        sum += us[j], ++count;
    const double got = o.kind == sc::op_kind::compute ? model.compute_us(o, 132) : model.comm_us(o, 2, false);
    if (std::abs(got - sum / count) > 1e-9 * (1 + sum / count)) std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sc = overlap::schedule;
  if (size > 0 && data[0] == '#') {
    round_trip(data + 1, size - 1);
    return 0;
  }
  const overlap::sim::machine h100 = overlap::sim::h100_node();
  try {
    // The file reader for one input in eight (files are slow), the constructor for every input.
    const auto doc = nlohmann::json::parse(data, data + size, nullptr, false);
    if (size % 8 == 0) {
      static const std::string path = "/tmp/overlap_measured_cost_fuzz." + std::to_string(getpid()) + ".json";
      {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
      }
      try {
        (void)overlap::sim::measured_cost_model::from_file(h100, path);
      } catch (const std::invalid_argument&) {
      } catch (const std::runtime_error&) {}
    }
    if (doc.is_discarded()) return 0;
    const overlap::sim::measured_cost_model model(h100, doc);
    for (std::size_t t = 0; t < sc::op_type_count; ++t) {
      sc::op o;
      o.key.type = static_cast<sc::op_type>(t);
      o.key.at.layer = static_cast<int>(t % 4);
      o.kind = sc::kind_of(o.key.type);
      o.bytes = 1 << 20;
      o.flops = 1e9;
      const double us = sc::is_communication(o.kind) ? model.comm_us(o, 8, false) : model.compute_us(o, 66);
      if (!std::isfinite(us) || us < 0) std::abort();
    }
  } catch (const std::invalid_argument&) {}
  return 0;
}
