// libFuzzer target: bytes are a measured-cost document. from_file() and the constructor either
// throw their documented errors (std::runtime_error for unreadable or non-JSON text,
// std::invalid_argument listing the bad entries) or give a model whose times are finite and
// not negative.
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
  static const std::string path = "/tmp/overlap_measured_cost_fuzz." + std::to_string(getpid()) + ".json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const overlap::sim::machine h100 = overlap::sim::h100_node();
  try {
    const auto model = overlap::sim::measured_cost_model::from_file(h100, path);
    // Also through the constructor, from the document parsed without the file reader.
    const auto doc = nlohmann::json::parse(data, data + size);
    const overlap::sim::measured_cost_model again(h100, doc);
    if (again.measured() != model.measured()) std::abort();
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
  } catch (const std::runtime_error&) {
  }
  return 0;
}
