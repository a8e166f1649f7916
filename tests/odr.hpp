#pragma once
// The same configuration used from two translation units (odr_a.cpp, odr_b.cpp) must link and
// agree: everything in the headers is inline or a template.
#include <overlap/overlap.hpp>

namespace odr {
namespace ov = overlap;
using cfg = ov::config<ov::tp<2>, ov::sequence_parallel<>, ov::tp_comm_overlap<>, ov::pp<2>, ov::vpp<2>, ov::dp<4>,
                       ov::distributed_optimizer<>>;
ov::resolved_settings resolved_a();
ov::resolved_settings resolved_b();
std::size_t violations_a();
std::size_t violations_b();
}  // namespace odr
