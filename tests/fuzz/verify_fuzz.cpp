// libFuzzer target: bytes decode into a step of small, often malformed programs; verify() must
// answer with findings, never an exception, a crash or undefined behaviour (ASan + UBSan), and
// each finding must describe.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <overlap/verify/verify.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::byte_reader in(data, size);
  const auto step = fuzz::decode_step(in);
  try {
    for (const auto& f : overlap::verify::verify(step))
      if (overlap::verify::describe(f, step).empty()) std::abort();
  } catch (...) {
    std::abort();
  }
  return 0;
}
