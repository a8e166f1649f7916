// libFuzzer target: bytes are a machine-profile document (sim/machine/profile_json.hpp). read_profile()
// throws only its documented errors (std::runtime_error for text that is not JSON,
// std::invalid_argument for problems); a document profile_from_json accepts gives a cost model
// whose times for every kind of compute op, on all SMs and on few, are finite and not negative.
#include <unistd.h>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include <overlap/sim/cost/analytic.hpp>
#include <overlap/sim/machine/profile_json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace sc = overlap::schedule;
  namespace sim = overlap::sim;
  // The file reader for one input in eight (files are slow), the document reader for every one.
  if (size % 8 == 0) {
    static const std::string path = "/tmp/overlap_profile_fuzz." + std::to_string(getpid()) + ".json";
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
      (void)sim::read_profile(path);
    } catch (const std::invalid_argument&) {
    } catch (const std::runtime_error&) {}
  }
  const auto doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  std::shared_ptr<const sim::profile> p;
  try {
    p = std::make_shared<const sim::profile>(sim::profile_from_json(doc));
  } catch (const std::invalid_argument&) {
    return 0;
  }
  for (const char* backend : {"cudnn", "flash"}) {
    sim::machine m = sim::with_profile(sim::h100_node(), p);
    m.attention_backend = backend;
    m.sustained_load = size % 2 == 0;
    const sim::analytic_cost_model cost(m);
    // Shapes from the input's last bytes: inside, between and far beyond any grid.
    const std::uint8_t seed = size > 0 ? data[size - 1] : 0;
    const std::int64_t a = std::int64_t{1} << (seed % 24), b = std::int64_t{1} << ((seed / 3) % 24) | 7;
    for (const sc::op_type type :
         {sc::op_type::fc1_fprop, sc::op_type::experts_fprop, sc::op_type::experts_dgrad, sc::op_type::experts_wgrad,
          sc::op_type::attn_core_fprop, sc::op_type::attn_core_bprop, sc::op_type::none}) {
      sc::op o;
      o.key.type = type;
      o.gemm = {a, b, a + b, 1 + seed % 300};
      o.flops = 2.0 * static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(a + b);
      o.memory_bytes = std::int64_t{1} << (seed % 40);
      for (const int sms : {m.sms, 1 + m.sms / 3, 1}) {
        const double us = cost.compute_us(o, sms);
        if (!std::isfinite(us) || us < 0) std::abort();
      }
    }
  }
  return 0;
}
