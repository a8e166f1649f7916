// libFuzzer target: bytes are a measured-cost document. from_file() throws only its documented
// errors (std::runtime_error for non-JSON text, std::invalid_argument for bad entries, a number
// beyond a double included); the constructor, on what nlohmann parses, throws
// std::invalid_argument or gives a model whose times are finite and not negative.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <unistd.h>

#include <overlap/sim/measured_cost.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sc = overlap::schedule;
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
      } catch (const std::runtime_error&) {
      }
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
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
