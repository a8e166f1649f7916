// libFuzzer target for the overlap-plan reader: any bytes, read as YAML (first byte even) or
// JSON (odd), then the rest as a Bridge config with a Hydra override taken from its last line.
// Reading must either give settings that validate() accepts as input, or throw input_error with
// a message; never crash, leak, or hit undefined behaviour (ASan + UBSan).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <overlap/rules/validate.hpp>
#include <overlap/schedule/optimizer_state.hpp>

#include "bridge.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool as_json = (data[0] & 1u) != 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    overlap_plan::document doc = overlap_plan::parse_text(text, "fuzz", as_json);
    const auto last = text.rfind('\n');
    if (last != std::string::npos && last + 1 < text.size()) overlap_plan::apply_override(doc, text.substr(last + 1));
    const overlap_plan::bridge_config c = overlap_plan::read_config(doc, {.process_environment = false});
    const overlap::report r = overlap::validate(c.settings);
    if (r.ok() != r.resolved.has_value()) std::abort();
    // What was read writes back and reads again to the same settings, and to the same optimizer
    // state.
    const overlap_plan::bridge_config back = overlap_plan::read_config(
        overlap_plan::parse_text(overlap_plan::to_yaml(overlap_plan::write_config(c.settings)), "fuzz-back", false),
        {.process_environment = false});
    if (!(back.settings == c.settings)) std::abort();
    const auto state = [](const overlap_plan::bridge_config& x) {
      return overlap::schedule::adam_state_bytes(x.workload.optimizer, x.settings.precision, x.settings.te_version);
    };
    // The optimizer's fields as write_config writes them, with the precision and TE version.
    const overlap_plan::json written = overlap_plan::write_config(c.settings, &c.workload);
    overlap_plan::json part = overlap_plan::json::object();
    for (const char* section : {"optimizer", "model", "overlap_plan"})
      if (written.contains(section)) part[section] = written[section];
    const overlap_plan::bridge_config again = overlap_plan::read_config(
        overlap_plan::parse_text(part.dump(), "fuzz-optimizer", true), {.process_environment = false});
    if (state(again) != state(c)) std::abort();
  } catch (const overlap_plan::input_error& e) {
    if (std::string(e.what()).empty()) std::abort();
  }
  return 0;
}
