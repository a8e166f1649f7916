// The overrides between two settings values (overrides.hpp).
#include "overrides.hpp"

#include <type_traits>

#include "convert.hpp"

namespace overlap_plan {
namespace {

/// A settings field's value as a Bridge override value ("true", "alltoall", "null", "[a,b]").
template <class T>
std::string override_value(const T& v) {
  if constexpr (detail::is_optional<T>::value) {
    if (!v) return "null";
    return override_value(*v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(ov::to_string(v));
  } else if constexpr (detail::is_enum_set<T>::value) {
    std::string out = "[";
    // Appended in two steps: g++ 12 at -O3 warns falsely (-Wrestrict) on "literal" + string&&.
    for (const auto& x : detail::enum_list(v)) (out += out.size() > 1 ? "," : "") += x.template get<std::string>();
    return out + "]";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(v);
  } else {
    return "...";
  }
}

/// The override that sets settings field `field` to `v`, at the place the config reads it from:
/// Hydra's `a.b=v` where the config holds a.b, `++a.b=v` (set or add) where it does not.
template <class T>
std::string override_for(const bridge_config& c, std::string_view field, const T& v) {
  const std::string path = c.path_of.at(std::string(field));
  const auto set = [&](const std::string& p, const std::string& value) {
    return (c.in_document.contains(p) ? "" : "++") + p + "=" + value;
  };
  if constexpr (std::is_same_v<T, ov::dtype>) {
    const std::string section = path.substr(0, path.find('.'));
    if (v == ov::dtype::fp32) return set(section + ".bf16", "false") + " " + set(section + ".fp16", "false");
    return set(section + "." + std::string(ov::to_string(v)), "true");
  } else {
    if constexpr (std::is_same_v<T, bool>)
      if (field == "use_dist_ckpt") return set("checkpoint.ckpt_format", v ? "torch_dist" : "torch");
    if (path.starts_with("--")) return path + " " + override_value(v);
    if (path.starts_with("environment ")) return "(environment) " + path.substr(12) + "=" + override_value(v);
    return set(path, override_value(v));
  }
}

/// The overrides of a userbuffer config's slots: each slot that `to` changes, its method and the
/// knobs that differ from TE-6's defaults for that method.
void userbuffer_overrides(const std::string& path, const document& doc, const std::optional<ov::ub::user_config>& from,
                          const std::optional<ov::ub::user_config>& to, std::vector<std::string>& out) {
  const auto set = [&](const std::string& key, const std::string& value) {
    out.push_back((detail::find(doc.tree, key) ? "" : "++") + key + "=" + value);
  };
  for (const ov::ub::slot_id id : ov::ub::all_slots) {
    const std::optional<ov::ub::slot>& x = to ? to->slots[id] : std::optional<ov::ub::slot>{};
    const std::optional<ov::ub::slot>& was = from ? from->slots[id] : std::optional<ov::ub::slot>{};
    if (!x || x == was) continue;
    const std::string slot = path + "." + std::string(ov::ub::to_string(id));
    const ov::ub::slot base = ov::ub::default_knobs(x->method);
    set(slot + ".method", std::string(ov::to_string(x->method)));
    ov::reflect::for_each_field_pair(base, *x, [&](std::string_view knob, const auto& d, const auto& v) {
      if (knob != "method" && !(d == v)) set(slot + "." + std::string(knob), override_value(v));
    });
  }
}

}  // namespace

std::vector<std::string> overrides_between(const bridge_config& c, const document& doc, const ov::settings& from,
                                           const ov::settings& to) {
  std::vector<std::string> out;
  ov::reflect::for_each_field_pair(from, to, [&](std::string_view field, const auto& a, const auto& b) {
    using T = std::remove_cvref_t<decltype(a)>;
    if (a == b) return;
    if constexpr (std::is_same_v<T, std::optional<ov::ub::user_config>>)
      userbuffer_overrides(c.path_of.at(std::string(field)), doc, a, b, out);
    else
      out.push_back(override_for(c, field, b));
  });
  return out;
}

std::optional<std::string> bridge_source::written_at(std::string_view field) const {
  const auto p = config_.path_of.find(std::string(field));
  if (p == config_.path_of.end() || !doc_.where.count(p->second)) return std::nullopt;
  return p->second;
}

bool bridge_source::holds_upstream_default(std::string_view field) const {
  return overlap_plan::holds_upstream_default(doc_, config_, field);
}

}  // namespace overlap_plan
