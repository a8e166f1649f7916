// libFuzzer target: any bytes decode into a settings value (every field, enums and bit sets
// included, out-of-range values too); validate() must neither crash nor hit undefined behaviour
// (ASan + UBSan), and its report must be consistent.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

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
  return 0;
}
