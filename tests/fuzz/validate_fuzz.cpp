// libFuzzer target: any bytes decode into a settings value (every field, enums and bit sets
// included, out-of-range values too); validate() must neither crash nor hit undefined behaviour
// (ASan + UBSan), and its report must be consistent; so must read_as_upstream(), which must end
// without a table defect (logic_error) and leave only rules upstream enforces.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <stdexcept>

#include <overlap/rules/upstream.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::byte_reader in(data, size);
  const overlap::settings s = fuzz::decode_settings(in);
  const overlap::report r = overlap::validate(s);
  // The report is consistent: resolved exactly when valid, only known ids, OPT-3 alone.
  if (r.ok() != r.resolved.has_value()) std::abort();
  for (const overlap::diagnostic& d : r)
    if (overlap::rules::find(d.id).id != d.id) std::abort();
  if (r.violates("OPT-3") && r.count() != 1) std::abort();
  try {
    const overlap::upstream_reading u = overlap::read_as_upstream(s);
    if (r.ok() && (!u.lenient.empty() || !(u.as_run == s))) std::abort();
    for (const overlap::diagnostic& d : u.errors)
      if (overlap::rules::find(d.id).upstream_for(u.as_run) != overlap::rules::upstream::enforces) std::abort();
  } catch (const std::logic_error&) {
    std::abort();
  }
  return 0;
}
