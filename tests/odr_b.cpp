#include "odr.hpp"

namespace odr {
ov::resolved_settings resolved_b() { return cfg::resolved; }
std::size_t violations_b() {
  ov::settings s = cfg::settings;
  s.tensor_model_parallel_size = 1;
  return ov::validate(s).count();
}
}  // namespace odr
