#pragma once
/// @file
/// The node presets by name, in the order lists for people give them: the GPU names (settings'
/// `gpu_model`) that have one. A GPU without a preset (a100) is simulated on another node with
/// its compute measured (`with_profile`), never silently as an H100.

#include <string>
#include <string_view>

#include <overlap/settings/enums.hpp>
#include <overlap/sim/machine/blackwell.hpp>
#include <overlap/sim/machine/machine.hpp>

namespace overlap::sim {

/// A preset: its name and the function that makes its machine.
struct node_preset {
  std::string_view name;
  machine (*make)();
};

inline constexpr node_preset node_presets[] = {{"h100", h100_node}, {"h200", h200_node},    {"b200", b200_node},
                                               {"b300", b300_node}, {"gb200", gb200_nvl72}, {"gb300", gb300_nvl72}};

/// The preset named `name`, or null.
inline const node_preset* preset_named(std::string_view name) {
  for (const node_preset& p : node_presets)
    if (p.name == name) return &p;
  return nullptr;
}

/// The preset of `gpu`'s node, or null where it has none.
inline const node_preset* preset_for(gpu_model gpu) { return preset_named(to_string(gpu)); }

/// The names of the presets whose machine `keep` holds for (every one without `keep`), as a list
/// for people: "h100, h200, ...".
inline std::string preset_list(bool (*keep)(const machine&) = nullptr) {
  std::string out;
  for (const node_preset& p : node_presets)
    if (!keep || keep(p.make())) (out += out.empty() ? "" : ", ") += p.name;
  return out;
}

}  // namespace overlap::sim
