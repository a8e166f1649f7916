#include "odr.hpp"

namespace odr {
ov::resolved_settings resolved_a() { return cfg::resolved; }
std::size_t violations_a() {
  ov::settings s = cfg::settings;
  s.tensor_model_parallel_size = 1;
  return ov::validate(s).count();
}
}  // namespace odr

#include <doctest/doctest.h>

TEST_CASE("two translation units share one definition of everything") {
  CHECK(odr::resolved_a() == odr::resolved_b());
  CHECK(odr::violations_a() == odr::violations_b());
  CHECK(odr::violations_a() == 2);  // tp 1: TP-1 and TP-9
}
